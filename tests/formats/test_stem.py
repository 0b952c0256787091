"""The capture file stem: built and read in one place, every stem read back as written."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.capture.naming import safe_name
from mindspeed_prof.formats.stem import Stem, claimed, rank_of

_hosts = (
    st.text(st.sampled_from("abcXYZ019_.-"), min_size=1, max_size=40)
    .filter(lambda h: h.strip("."))
    .map(lambda h: safe_name(h, "host"))
)
_stems = st.builds(
    Stem,
    rank=st.integers(0, 10**6),
    host=_hosts,
    pid=st.integers(0, 2**32),
    step=st.integers(0, 10**9),
    token=st.text("0123456789abcdef", min_size=6, max_size=6),
    index=st.integers(0, 50),
    claim=st.integers(1, 50),
)


@given(_stems)
def test_every_stem_reads_back_as_written(stem: Stem) -> None:
    text = stem.format()
    assert Stem.parse(text) == stem
    assert rank_of(text) == stem.rank


@given(
    _stems,
    st.sampled_from([".pt.trace.json", ".mstx.trace.json", ".summary.json", "_ascend_pt", ""]),
)
def test_a_file_or_folder_of_the_stem_reads_as_the_stem(stem: Stem, suffix: str) -> None:
    assert Stem.parse(stem.format() + suffix) == stem


def test_examples() -> None:
    stem = Stem(0, "node_1", 42, 2, "a1b2c3")
    assert stem.format() == "rank0_node_1_42_a1b2c3_step2"
    assert (
        msgspec.structs.replace(stem, index=3, claim=2).format()
        == "rank0_node_1_42_a1b2c3_step2_3_r2"
    )
    assert claimed("rank0_h_1_a1b2c3_step2", 3) == "rank0_h_1_a1b2c3_step2_r3"
    assert claimed("s", 1) == "s"


def test_older_stems_without_a_token_still_read() -> None:
    assert Stem.parse("rank3_host_1_77_step5.pt.trace.json") == Stem(3, "host_1", 77, 5)


def test_names_that_are_no_stem() -> None:
    assert Stem.parse("manifest.json") is None
    assert Stem.parse("rank0_step2_actor_update") is None  # an engine part's folder
    assert rank_of("rank0_step2_actor_update") == 0
    assert rank_of("manifest.json") is None
