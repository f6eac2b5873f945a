"""Provider adapters over raw httpx (Anthropic, OpenAI, Gemini). Not built yet."""

__all__: list[str] = []
