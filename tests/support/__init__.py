"""What the tests share: the scripted model (:mod:`.scripted_llm`), a real server in a
thread (:mod:`.server`), fresh PostgreSQL databases (:mod:`.pg`), the stores on each
backend (:mod:`.stores`), RPC helpers (:mod:`.rpc`), trusting a folder (:mod:`.trust`),
and the one fixtures plugin (:mod:`.fixtures`, registered by ``tests/conftest.py``)."""
