"""What makes files the ranks of one job: the judgement on what each file says of itself."""

from __future__ import annotations

from tracekit.ingest.jobs import CLOCK_SLACK_NS, FileIdentity, refusal

T0 = 1_780_000_000 * 10**9
H100 = frozenset({"NVIDIA H100 80GB HBM3"})


def rank(name: str, **said: object) -> FileIdentity:
    fields: dict[str, object] = {"gpus": H100, "start_ns": T0, "end_ns": T0 + 10**9, **said}
    return FileIdentity(name=name, **fields)  # type: ignore[arg-type]


def test_ranks_of_one_job_are_one_run():
    files = [rank(f"rank{r}", rank=r, world_size=4, host="node0") for r in range(4)]
    assert refusal(files) is None
    assert refusal(files[:1]) is None


def test_files_that_say_nothing_are_not_told_apart():
    assert refusal([FileIdentity("a"), FileIdentity("b")]) is None


def test_different_gpus():
    reason = refusal([rank("a"), rank("b", gpus=frozenset({"NVIDIA B200"}))])
    assert reason is not None and "different GPUs" in reason
    assert "NVIDIA B200 in b" in reason and "NVIDIA H100 80GB HBM3 in a" in reason
    # an unknown GPU disagrees with nobody
    assert refusal([rank("a"), rank("b", gpus=frozenset())]) is None


def test_the_same_rank_twice_or_different_world_sizes():
    assert "both rank 0" in (refusal([rank("a", rank=0), rank("b", rank=0)]) or "")
    assert "world sizes" in (refusal([rank("a", rank=0, world_size=2),
                                      rank("b", rank=1, world_size=8)]) or "")


def test_recorded_at_different_times():
    later = T0 + CLOCK_SLACK_NS + 2 * 10**9
    reason = refusal([rank("a"), rank("b", start_ns=later, end_ns=later + 10**9)])
    assert reason is not None and "different times" in reason and "UTC" in reason
    # profilers that start a little apart are one job
    near = T0 + 10**9 + CLOCK_SLACK_NS // 2
    assert refusal([rank("a"), rank("b", start_ns=near, end_ns=near + 10**9)]) is None


def test_clocks_that_are_no_wall_clock_prove_nothing():
    boot = 5 * 10**12  # a clock counting from the boot
    assert refusal([rank("a"), rank("b", start_ns=boot, end_ns=boot + 1)]) is None


def test_different_hosts_need_a_common_job_id():
    apart = [rank("a", host="node0"), rank("b", host="node1")]
    reason = refusal(apart)
    assert reason is not None and "different hosts" in reason
    same_job = [rank("a", host="node0", job="slurm-7"), rank("b", host="node1", job="slurm-7")]
    assert refusal(same_job) is None
    assert refusal(apart, job="my-job") is None  # --job NAME is the common id
    assert "different jobs" in (refusal([rank("a", job="1"), rank("b", job="2")]) or "")


def test_a_named_job_still_needs_the_same_gpus():
    reason = refusal([rank("a"), rank("b", gpus=frozenset({"NVIDIA B200"}))], job="j")
    assert reason is not None and "different GPUs" in reason
