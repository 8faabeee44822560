"""Scheduled jobs. `gantry serve` runs the scheduler."""

import os
import time

import grpc
import pytest

from conftest import Gantry, HANG_GUARD, code_of

# A schedule that does not come due during a test (1 January, 00:00).
RARELY = "0 0 1 1 *"



@pytest.fixture
def gantry(full_access_gantry):
    """Jobs' commands run outside the sandbox: a server takes them from a client
    only with --max-sandbox danger-full-access."""
    return full_access_gantry

def create(gantry, name, schedule, command, **extra):
    pb = gantry.pb
    created = gantry.stub.CreateCronJob(
        pb.CreateCronJobRequest(name=name, schedule=schedule, command=command, **extra), timeout=HANG_GUARD
    )
    assert created.success and not created.error
    return created.job


def test_a_job_runs_now_in_the_workspace_and_is_recorded(gantry):
    pb, stub = gantry.pb, gantry.stub
    job = create(gantry, "greet", RARELY, "echo hello > greeting.txt && echo done")
    assert job.status == pb.CRON_JOB_STATUS_ACTIVE
    assert job.working_dir == os.path.realpath(gantry.workspace)
    assert job.timeout_ms == 60000 and job.HasField("next_run") and not job.HasField("last_run")

    ran = stub.RunCronJob(pb.RunCronJobRequest(id=job.id), timeout=HANG_GUARD)
    assert ran.success
    run = ran.execution
    assert run.status == pb.CRON_EXECUTION_STATUS_SUCCESS
    assert (run.job_id, run.exit_code, run.stdout) == (job.id, 0, "done\n")
    assert (gantry.workspace / "greeting.txt").read_text() == "hello\n"

    stub.UpdateCronJob(pb.UpdateCronJobRequest(id=job.id, command="exit 7"), timeout=HANG_GUARD)
    failed = stub.RunCronJob(pb.RunCronJobRequest(id=job.id), timeout=HANG_GUARD).execution
    assert (failed.status, failed.exit_code) == (pb.CRON_EXECUTION_STATUS_FAILED, 7)

    by_name = stub.GetCronJob(pb.GetCronJobRequest(name="greet"), timeout=HANG_GUARD).job
    assert (by_name.id, by_name.run_count, by_name.fail_count) == (job.id, 1, 1)
    assert by_name.command == "exit 7" and by_name.working_dir == job.working_dir
    history = stub.GetCronHistory(pb.GetCronHistoryRequest(id=job.id), timeout=HANG_GUARD).executions
    assert [e.id for e in history] == [failed.id, run.id], "newest first"
    newest = stub.GetCronHistory(pb.GetCronHistoryRequest(id=job.id, limit=1), timeout=HANG_GUARD).executions
    assert [e.id for e in newest] == [failed.id]


def test_jobs_are_listed_updated_paused_resumed_and_deleted(gantry):
    pb, stub = gantry.pb, gantry.stub
    nightly = create(gantry, "nightly", "every day at 3am", "true")
    assert nightly.schedule == "0 3 * * *"
    hourly = create(gantry, "hourly", "0 * * * *", "true", timeout_ms=5000)
    assert hourly.timeout_ms == 5000
    jobs = stub.ListCronJobs(pb.ListCronJobsRequest(), timeout=HANG_GUARD).jobs
    assert [j.name for j in jobs] == ["hourly", "nightly"]

    updated = stub.UpdateCronJob(
        pb.UpdateCronJobRequest(id=nightly.id, schedule="*/10 * * * *", timeout_ms=1000), timeout=HANG_GUARD
    )
    assert updated.success
    assert (updated.job.schedule, updated.job.timeout_ms, updated.job.command) == ("*/10 * * * *", 1000, "true")

    paused = stub.PauseCronJob(pb.PauseCronJobRequest(id=nightly.id), timeout=HANG_GUARD)
    assert paused.success and paused.job.status == pb.CRON_JOB_STATUS_PAUSED
    assert not paused.job.HasField("next_run")
    resumed = stub.ResumeCronJob(pb.ResumeCronJobRequest(id=nightly.id), timeout=HANG_GUARD)
    assert resumed.success and resumed.job.status == pb.CRON_JOB_STATUS_ACTIVE
    assert resumed.job.HasField("next_run")

    deleted = stub.DeleteCronJob(pb.DeleteCronJobRequest(id=nightly.id), timeout=HANG_GUARD)
    assert deleted.success and not deleted.error
    code, _ = code_of(lambda: stub.GetCronJob(pb.GetCronJobRequest(id=nightly.id), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    assert [j.id for j in stub.ListCronJobs(pb.ListCronJobsRequest(), timeout=HANG_GUARD).jobs] == [hourly.id]


def test_the_scheduler_runs_a_job_on_its_schedule(gantry):
    pb, stub = gantry.pb, gantry.stub
    job = create(gantry, "tick", "* * * * * *", "echo tick")
    deadline = time.monotonic() + HANG_GUARD
    history = []
    while not history and time.monotonic() < deadline:
        history = [
            e
            for e in stub.GetCronHistory(pb.GetCronHistoryRequest(id=job.id), timeout=HANG_GUARD).executions
            if e.HasField("ended_at")
        ]
        if not history:
            time.sleep(0.05)
    assert history, "the scheduler did not run the job"
    assert history[0].status == pb.CRON_EXECUTION_STATUS_SUCCESS and history[0].stdout == "tick\n"
    stub.PauseCronJob(pb.PauseCronJobRequest(id=job.id), timeout=HANG_GUARD)
    assert stub.GetCronJob(pb.GetCronJobRequest(id=job.id), timeout=HANG_GUARD).job.run_count >= 1


def test_schedules_parse_from_cron_and_english(gantry):
    pb, stub = gantry.pb, gantry.stub
    parsed = stub.ParseCronSchedule(pb.ParseCronScheduleRequest(input="every day at 9am"), timeout=HANG_GUARD)
    assert parsed.success and parsed.cron_expression == "0 9 * * *" and parsed.description
    same = stub.ParseCronSchedule(pb.ParseCronScheduleRequest(input="*/15 * * * *"), timeout=HANG_GUARD)
    assert same.cron_expression == "*/15 * * * *"
    code, details = code_of(
        lambda: stub.ParseCronSchedule(pb.ParseCronScheduleRequest(input="whenever"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("input:")


def test_bad_input_and_unknown_jobs_are_rejected(gantry):
    pb, stub = gantry.pb, gantry.stub
    for fields, field in [
        (dict(schedule=RARELY, command="true"), "name"),
        (dict(name="x", command="true"), "schedule"),
        (dict(name="x", schedule="at some point", command="true"), "schedule"),
        (dict(name="x", schedule=RARELY), "command"),
        (dict(name="x", schedule=RARELY, command="true", timeout_ms=0), "timeout_ms"),
    ]:
        code, details = code_of(lambda: stub.CreateCronJob(pb.CreateCronJobRequest(**fields), timeout=HANG_GUARD))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(field), (field, details)
    job = create(gantry, "taken", RARELY, "true")
    code, _ = code_of(
        lambda: stub.CreateCronJob(
            pb.CreateCronJobRequest(name="taken", schedule=RARELY, command="true"), timeout=HANG_GUARD
        )
    )
    assert code == grpc.StatusCode.ALREADY_EXISTS

    code, details = code_of(lambda: stub.GetCronJob(pb.GetCronJobRequest(), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details == "id or name: required"
    code, _ = code_of(lambda: stub.UpdateCronJob(pb.UpdateCronJobRequest(id=job.id), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    code, details = code_of(
        lambda: stub.UpdateCronJob(pb.UpdateCronJobRequest(id=job.id, schedule="soon"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("schedule")
    code, details = code_of(lambda: stub.RunCronJob(pb.RunCronJobRequest(), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details == "id: required"

    unknown = [
        lambda: stub.GetCronJob(pb.GetCronJobRequest(name="nope"), timeout=HANG_GUARD),
        lambda: stub.UpdateCronJob(pb.UpdateCronJobRequest(id="nope", timeout_ms=1), timeout=HANG_GUARD),
        lambda: stub.PauseCronJob(pb.PauseCronJobRequest(id="nope"), timeout=HANG_GUARD),
        lambda: stub.ResumeCronJob(pb.ResumeCronJobRequest(id="nope"), timeout=HANG_GUARD),
        lambda: stub.DeleteCronJob(pb.DeleteCronJobRequest(id="nope"), timeout=HANG_GUARD),
        lambda: stub.GetCronHistory(pb.GetCronHistoryRequest(id="nope"), timeout=HANG_GUARD),
        lambda: stub.RunCronJob(pb.RunCronJobRequest(id="nope"), timeout=HANG_GUARD),
    ]
    assert [code_of(call)[0] for call in unknown] == [grpc.StatusCode.NOT_FOUND] * len(unknown)
    assert stub.GetCronJob(pb.GetCronJobRequest(id=job.id), timeout=HANG_GUARD).job == job, "nothing changed"


def test_a_server_below_full_access_takes_no_command_job(pb, tmp_path):
    default = Gantry(pb, tmp_path)
    try:
        code, details = code_of(
            lambda: default.stub.CreateCronJob(
                pb.CreateCronJobRequest(name="planted", schedule=RARELY, command="touch planted"),
                timeout=HANG_GUARD,
            )
        )
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details)
        assert "outside the sandbox" in details and "--max-sandbox danger-full-access" in details
        listed = default.stub.ListCronJobs(pb.ListCronJobsRequest(), timeout=HANG_GUARD).jobs
        assert list(listed) == []
        assert not (default.workspace / "planted").exists()
    finally:
        default.stop()
