"""Capture names: a per-process token in every stem, each stem claimed with O_EXCL, so two
processes never share a file, even with the same host name and pid (containers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from mindspeed_prof.capture.naming import claim_stem, process_token, release_stem


def test_a_stem_is_claimed_once_whoever_asks(tmp_path: Path) -> None:
    got: list[str] = []
    lock = threading.Lock()

    def claim() -> None:
        stem = claim_stem(tmp_path, "rank0_h_1_tok_step1")
        with lock:
            got.append(stem)

    threads = [threading.Thread(target=claim) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 16 and "rank0_h_1_tok_step1" in got
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f".{s}.claim" for s in got)
    for stem in got:  # the captures are written: their names hold the stems from now on
        (tmp_path / f"{stem}.mstx.trace.json").write_text("{}")
        release_stem(tmp_path, stem)
    assert not list(tmp_path.glob(".*"))
    assert claim_stem(tmp_path, "rank0_h_1_tok_step1") not in got


def test_a_stem_is_taken_while_claimed_and_while_its_files_exist(tmp_path: Path) -> None:
    first = claim_stem(tmp_path, "s")  # a capture running: nothing written yet
    assert (first, claim_stem(tmp_path, "s")) == ("s", "s_r2")
    release_stem(tmp_path, first)  # it wrote nothing: the stem is free again
    assert claim_stem(tmp_path, "s") == "s"


def test_a_stem_an_earlier_capture_holds_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "rank0_h_1_step1.mstx.trace.json").write_text("{}")  # before claims existed
    assert claim_stem(tmp_path, "rank0_h_1_step1") == "rank0_h_1_step1_r2"


def test_a_forked_child_gets_a_token_of_its_own() -> None:
    parent = process_token()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its token, leave at once
        os.write(write, process_token().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 6 and child != parent and process_token() == parent


SAME_HOST_AND_PID = """
import os, socket, sys, time
os.getpid = lambda: 4242                 # two containers with host networking: the same pid
socket.gethostname = lambda: "shared"    # and the same host name
from mindspeed_prof import Profiler, mstx
prof = Profiler.from_config({"profile": True, "mstx": True, "profile_level": "level_none",
                             "profile_save_path": sys.argv[1]}, rank=0)
with prof.step(1), prof.stage("actor_update"), mstx.range(sys.argv[2]):
    time.sleep(0.05)
prof.close()
print(prof.captures[0].files[0])
"""


def test_two_jobs_with_one_host_name_and_pid_keep_both_captures(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MINDSPEED_PROF_RUN"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SAME_HOST_AND_PID, str(tmp_path), job],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for job in ("job_a", "job_b")
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    files = [Path(o.strip().splitlines()[-1]) for o, _ in outs]
    assert files[0] != files[1] and all("_4242_" in f.name for f in files)
    docs = [json.loads(f.read_text()) for f in files]
    assert [{e["name"] for e in d["traceEvents"]} & {"job_a", "job_b"} for d in docs] == [
        {"job_a"},
        {"job_b"},
    ]  # neither overwrote the other
    assert docs[0]["mindspeed_prof"]["run"] != docs[1]["mindspeed_prof"]["run"]
