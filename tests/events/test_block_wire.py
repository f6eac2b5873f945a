"""``TextBlock.to_wire`` builds its dict directly (a long history has thousands): it is
what the generic ``model_dump`` path gives, less the fields Anthropic would reject."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tron_events.messages import TextBlock, _Block

texts = st.builds(
    TextBlock,
    text=st.text(),
    signature=st.none() | st.text(max_size=20),
    phase=st.none() | st.sampled_from(["commentary", "final_answer"]),
)


@given(texts)
def test_the_direct_wire_form_is_the_generic_one(block: TextBlock) -> None:
    assert block.to_wire() == _Block.to_wire(block)
    assert block.to_wire() == {"type": "text", "text": block.text}
