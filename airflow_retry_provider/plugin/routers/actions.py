"""The actions on letters: preview, replay (a job in ``retry_replay_jobs``), cancel, park and dismiss.

Replay, cancel, park and dismiss need edit access to every DAG they touch, take the acting user
from Airflow's auth, accept POST with a JSON body only, and land in Airflow's Audit Log (one row per
DAG touched, the letter ids in ``extra``; refused attempts too), in ``retry_replays`` /
``retry_replay_jobs`` and in each letter's history.

No ``from __future__ import annotations`` here: FastAPI reads the annotations at runtime.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, status

from airflow_retry_provider import settings
from airflow_retry_provider.dlq import JobError, Letter, LetterFilter, ReplayRequest, split_replayable
from airflow_retry_provider.plugin.access import Access, AccessDep, audit
from airflow_retry_provider.plugin.deps import DriverDep, JobDep, JobStoreDep, StoreDep, replay_engine
from airflow_retry_provider.plugin.letters import LettersDep, selected
from airflow_retry_provider.plugin.models import DismissBody, ParkBody, PreviewBody, ReplayBody

router = APIRouter(prefix="/api", tags=["actions"])

REPLAY_EVENT, CANCEL_EVENT, PARK_EVENT, DISMISS_EVENT = (
    "retry_provider_replay",
    "retry_provider_cancel_replay",
    "retry_provider_park",
    "retry_provider_dismiss",
)

replay_selection = selected(ReplayBody, REPLAY_EVENT)
park_selection = selected(ParkBody, PARK_EVENT)
dismiss_selection = selected(DismissBody, DISMISS_EVENT)


@router.post("/preview")
def preview(request: Request, access: AccessDep, body: PreviewBody, letters: LettersDep) -> dict[str, Any]:
    """Exactly what a replay of the selection would touch (Airflow's dry-run, same flags), its count and pace."""
    chosen = letters.select(access, body)
    with replay_engine(request, letters.store) as (engine, _):
        return engine.preview(
            ids=[letter.id for letter in chosen],
            downstream=body.downstream,
            run_on_latest_version=body.run_on_latest_version,
        ).to_json()


@router.post(
    "/replays",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(replay_selection)],
)
def replay(
    request: Request,
    access: AccessDep,
    store: StoreDep,
    jobs: JobStoreDep,
    driver: DriverDep,
    selection: Annotated[tuple[list[Letter], ReplayBody], Depends(replay_selection)],
) -> dict[str, Any]:
    """Queue a replay job of the selection, as you; the api-server's drivers work it at the deployment's pace.

    Letters not in ``dlq`` or at the replay cap are listed in ``refused``; when none can be
    replayed the answer is 409 and no job is created. Poll ``/api/jobs/{id}`` for progress.
    """
    letters, body = selection
    fix_version = body.fix_version or ""
    if not fix_version and body.run_on_latest_version:
        with replay_engine(request, store) as (engine, api):
            fix_version = engine.latest_fix_version(api, sorted({lt.dag_id for lt in letters})) or ""
    try:
        ask = ReplayRequest(
            access.actor,
            body.reason,
            fix_version,
            body.processing_version or None,
            downstream=body.downstream,
            source=body.source,
            run_on_latest_version=body.run_on_latest_version,
        )
    except ValueError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
    ready, refused = split_replayable(letters, settings.replay_max_attempts())
    if not ready:
        why = "; ".join(f"letter {r.letter_id}: {r.reason}" for r in refused)
        raise HTTPException(status.HTTP_409_CONFLICT, f"nothing to replay: {why}")
    canary = body.canary
    try:
        if isinstance(canary, bool):
            job_id = jobs.create(ask, ready, canary=canary)
        else:
            job_id = jobs.create(ask, ready, canary_letter_id=canary)
    except JobError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
    driver.wake()
    audit(
        access.actor,
        REPLAY_EVENT,
        ready,
        outcome="queued",
        job=job_id,
        reason=ask.reason,
        fix_version=ask.fix_version,
    )
    return {
        **jobs.require(job_id).to_json(),
        "refused": [r.to_json() for r in refused],
        "url": f"{request.scope.get('root_path', '')}/jobs/{job_id}",
    }


@router.get("/jobs/{job_id}")
def get_job(job: JobDep) -> dict[str, Any]:
    """A replay job from the table (every api-server worker answers the same): status, counts, each letter."""
    return job.to_json()


@router.post("/jobs/{job_id}/cancel")
def cancel_job(access: AccessDep, store: StoreDep, jobs: JobStoreDep, job: JobDep) -> dict[str, Any]:
    """Cancel a queued or running job: letters it has not claimed stay in ``dlq`` (409 once it is finished)."""
    ids = [item.letter_id for item in job.items]
    letters = store.list(LetterFilter(ids=ids), limit=len(ids) or 1)
    try:
        access.require(job.job.dag_ids, "PUT")
    except HTTPException:
        audit(access.actor, CANCEL_EVENT, letters, outcome="refused", job=job.job.id)
        raise
    try:
        left = jobs.cancel(job.job.id, access.actor)
    except JobError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    audit(access.actor, CANCEL_EVENT, letters, outcome="cancelled", job=job.job.id)
    return {**jobs.require(job.job.id).to_json(), "letters_left_in_dlq": left}


@router.post(
    "/park",
    dependencies=[Depends(park_selection)],
)
def park(
    access: AccessDep,
    store: StoreDep,
    selection: Annotated[tuple[list[Letter], ParkBody], Depends(park_selection)],
) -> dict[str, Any]:
    """``dlq`` (or ``replaying`` not mid-clear) -> ``parked``: kept for inspection, replays refused."""
    letters, body = selection
    changed = store.park([letter.id for letter in letters], access.who(), body.reason)
    return status_changed(access, PARK_EVENT, "parked", letters, changed, body.reason)


@router.post(
    "/dismiss",
    dependencies=[Depends(dismiss_selection)],
)
def dismiss(
    access: AccessDep,
    store: StoreDep,
    selection: Annotated[tuple[list[Letter], DismissBody], Depends(dismiss_selection)],
) -> dict[str, Any]:
    """``dlq``, ``parked`` (or ``replaying`` not mid-clear) -> ``dismissed``: closed without a replay, with a reason."""
    letters, body = selection
    try:
        changed = store.dismiss([letter.id for letter in letters], access.who(), body.reason)
    except ValueError as exc:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from None
    return status_changed(access, DISMISS_EVENT, "dismissed", letters, changed, body.reason)


def status_changed(
    access: Access, event: str, outcome: str, letters: list[Letter], changed: list[int], reason: str
) -> dict[str, Any]:
    """Audit the letters a park or dismiss changed; the answer lists the ids changed and those left as they were."""
    audit(access.actor, event, [x for x in letters if x.id in changed], outcome=outcome, reason=reason)
    return {"changed": changed, "unchanged": [x.id for x in letters if x.id not in changed]}
