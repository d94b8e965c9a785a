"""Gap rules between bronze, silver and gold: scenarios, ordering, parsing and workspace isolation."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_retry_provider.reconciliation import (
    BronzeTable,
    Finding,
    Snapshot,
    SnapshotError,
    SourceRun,
    Transform,
    find_gaps,
    finding_sort_key,
)
from airflow_retry_provider.reconciliation.models import TransformLayer

T0 = datetime(2026, 11, 30, tzinfo=timezone.utc)


def at(hour: int) -> datetime:
    return T0 + timedelta(hours=hour)


def run(source: str, status: str, started: int, ws: str = "w1") -> SourceRun:
    return SourceRun(ws, source, status, at(started), None)  # type: ignore[arg-type]


def table(
    source: str, name: str, processed: int | None, *, selected: bool = True, ws: str = "w1"
) -> BronzeTable:
    return BronzeTable(ws, source, name, selected, None if processed is None else at(processed))


def silver(tid: str, inputs: tuple[str, ...], last: int | None, ws: str = "w1") -> Transform:
    return Transform(ws, tid, "silver", inputs, None if last is None else at(last))


def gold(tid: str, inputs: tuple[str, ...], last: int | None, ws: str = "w1") -> Transform:
    return Transform(ws, tid, "gold", inputs, None if last is None else at(last))


def snap(*rows: SourceRun | BronzeTable | Transform) -> Snapshot:
    return Snapshot(
        source_runs=tuple(r for r in rows if isinstance(r, SourceRun)),
        bronze_tables=tuple(r for r in rows if isinstance(r, BronzeTable)),
        transforms=tuple(r for r in rows if isinstance(r, Transform)),
    )


def summary(findings: list[Finding]) -> list[tuple[str, str, str, datetime, datetime | None]]:
    return [(f.layer, f.kind, f.subject, f.expected_after, f.observed_at) for f in findings]


SCENARIOS = [
    # --- bronze
    pytest.param(
        snap(run("crm", "ok", 5), table("crm", "orders", None)),
        [("bronze", "missing", "crm/orders", at(5), None)],
        id="bronze-selected-never-processed-is-missing",  # the basic "promised table never arrived"
    ),
    pytest.param(
        snap(run("crm", "ok", 5), table("crm", "orders", 4)),
        [("bronze", "stale", "crm/orders", at(5), at(4))],
        id="bronze-processed-before-latest-ok-run-is-stale",  # loaded by an older run only
    ),
    pytest.param(
        snap(run("crm", "ok", 5), table("crm", "orders", 5)),
        [],
        id="bronze-processed-at-run-start-is-not-stale",  # equal timestamps: "earlier" is strict
    ),
    pytest.param(
        snap(run("crm", "ok", 5), table("crm", "orders", 6)),
        [],
        id="bronze-processed-after-run-start",  # up to date
    ),
    pytest.param(
        snap(run("crm", "ok", 5), table("crm", "orders", None, selected=False)),
        [],
        id="bronze-not-selected-no-expectation",  # unselected tables are never promised
    ),
    pytest.param(
        snap(run("crm", "ok", 5), table("crm", "orders", 1, selected=False)),
        [],
        id="bronze-not-selected-and-old-no-expectation",  # unselected tables are never stale either
    ),
    pytest.param(
        snap(run("crm", "failed", 5), run("crm", "running", 6), table("crm", "orders", None)),
        [],
        id="bronze-no-ok-run-no-expectation",  # failed and running runs promise nothing
    ),
    pytest.param(
        snap(table("crm", "orders", None)),
        [],
        id="bronze-no-run-at-all-no-expectation",  # a source that never ran promises nothing
    ),
    pytest.param(
        snap(run("crm", "ok", 2), run("crm", "failed", 5), table("crm", "orders", 3)),
        [],
        id="bronze-later-failed-run-does-not-move-expectation",  # only ok runs count
    ),
    pytest.param(
        snap(run("crm", "ok", 4), run("crm", "ok", 2), table("crm", "orders", 3)),
        [("bronze", "stale", "crm/orders", at(4), at(3))],
        id="bronze-latest-ok-run-by-started-at",  # rows out of order: the latest start wins
    ),
    pytest.param(
        snap(run("erp", "ok", 5), table("crm", "orders", None)),
        [],
        id="bronze-other-source-run-no-expectation",  # a run only sets expectations for its own source
    ),
    pytest.param(
        snap(run("crm", "ok", 5, ws="w2"), table("crm", "orders", None)),
        [],
        id="bronze-same-source-in-other-workspace-no-expectation",  # workspaces never mix
    ),
    # --- silver
    pytest.param(
        snap(table("crm", "orders", 3), silver("stg", ("crm/orders",), None)),
        [("silver", "missing", "stg", at(3), None)],
        id="silver-never-run-with-processed-input-is-missing",  # bronze loaded, silver never built
    ),
    pytest.param(
        snap(
            table("crm", "orders", 3), table("crm", "users", 5), silver("stg", ("crm/orders", "crm/users"), 4)
        ),
        [("silver", "stale", "stg", at(5), at(4))],
        id="silver-ran-before-newest-input-is-stale",  # expected_after is the newest processed input
    ),
    pytest.param(
        snap(table("crm", "orders", 3), silver("stg", ("crm/orders",), 3)),
        [],
        id="silver-ran-at-newest-input-is-not-stale",  # equal timestamps: "earlier" is strict
    ),
    pytest.param(
        snap(table("crm", "orders", 3), silver("stg", ("crm/orders",), 4)),
        [],
        id="silver-ran-after-newest-input",  # up to date
    ),
    pytest.param(
        snap(table("crm", "orders", 3), table("erp", "items", 6), silver("stg", (), 4)),
        [("silver", "stale", "stg", at(6), at(4))],
        id="silver-no-inputs-means-all-workspace-bronze",  # an empty list reads every bronze table
    ),
    pytest.param(
        snap(table("crm", "orders", None), silver("stg", ("crm/orders",), None)),
        [],
        id="silver-inputs-never-processed-no-expectation",  # nothing to build from yet
    ),
    pytest.param(
        snap(table("crm", "orders", None), silver("stg", (), None)),
        [],
        id="silver-no-inputs-and-no-processed-bronze-no-expectation",  # empty workspace bronze
    ),
    pytest.param(
        snap(silver("stg", (), None)),
        [],
        id="silver-no-bronze-tables-at-all-no-expectation",  # a transform alone promises nothing
    ),
    pytest.param(
        snap(table("crm", "orders", 3), table("crm", "users", 9), silver("stg", ("crm/orders",), 4)),
        [],
        id="silver-unlisted-newer-table-ignored",  # only the listed inputs count
    ),
    pytest.param(
        snap(table("crm", "orders", 3), table("erp", "orders", 6), silver("stg", ("orders",), 4)),
        [("silver", "stale", "stg", at(6), at(4))],
        id="silver-bare-table-name-matches-every-source",  # "orders" names crm/orders and erp/orders
    ),
    pytest.param(
        snap(table("crm", "orders", 6), silver("stg", ("crm/nope", "nope"), 4)),
        [],
        id="silver-unknown-input-no-expectation",  # inputs that name no table carry no time
    ),
    pytest.param(
        snap(table("crm", "orders", 6, selected=False), silver("stg", ("crm/orders",), 4)),
        [("silver", "stale", "stg", at(6), at(4))],
        id="silver-unselected-but-processed-input-counts",  # processed data is data, selected or not
    ),
    pytest.param(
        snap(table("crm", "orders", 6, ws="w2"), silver("stg", (), 4)),
        [],
        id="silver-other-workspace-bronze-ignored",  # "all bronze tables" means this workspace's
    ),
    # --- gold
    pytest.param(
        snap(silver("stg", (), 3), gold("rev", ("stg",), None)),
        [("gold", "missing", "rev", at(3), None)],
        id="gold-never-run-with-run-silver-is-missing",  # silver built, gold never
    ),
    pytest.param(
        snap(silver("a", (), 3), silver("b", (), 5), gold("rev", ("a", "b"), 4)),
        [("gold", "stale", "rev", at(5), at(4))],
        id="gold-ran-before-newest-silver-is-stale",  # expected_after is the newest silver run
    ),
    pytest.param(
        snap(silver("stg", (), 4), gold("rev", ("stg",), 4)),
        [],
        id="gold-ran-at-newest-silver-is-not-stale",  # equal timestamps: "earlier" is strict
    ),
    pytest.param(
        snap(silver("a", (), 3), silver("b", (), 9), gold("rev", ("a",), 4)),
        [],
        id="gold-unlisted-newer-silver-ignored",  # only the listed silver transforms count
    ),
    pytest.param(
        snap(silver("a", (), None), gold("rev", ("a",), None)),
        [],
        id="gold-inputs-never-run-no-expectation",  # silver never ran: nothing to build from
    ),
    pytest.param(
        snap(silver("a", (), None), gold("rev", (), None)),
        [],
        id="gold-no-inputs-and-no-silver-run-no-expectation",  # all silver transforms idle
    ),
    pytest.param(
        snap(silver("a", (), 3), silver("b", (), 7), gold("rev", (), 5)),
        [("gold", "stale", "rev", at(7), at(5))],
        id="gold-no-inputs-means-all-workspace-silver",  # an empty list reads every silver transform
    ),
    pytest.param(
        snap(gold("base", (), 8), gold("rev", ("base",), 2)),
        [],
        id="gold-input-naming-gold-transform-ignored",  # gold reads silver only
    ),
    pytest.param(
        snap(silver("stg", (), 6, ws="w2"), gold("rev", (), 2)),
        [],
        id="gold-other-workspace-silver-ignored",  # "all silver transforms" means this workspace's
    ),
    # --- the layers together
    pytest.param(
        snap(
            run("crm", "ok", 5),
            table("crm", "orders", 4),
            table("crm", "users", None),
            silver("stg", ("crm/orders",), 2),
            gold("rev", ("stg",), 1),
        ),
        [
            ("bronze", "stale", "crm/orders", at(5), at(4)),
            ("bronze", "missing", "crm/users", at(5), None),
            ("silver", "stale", "stg", at(4), at(2)),
            ("gold", "stale", "rev", at(2), at(1)),
        ],
        id="cascade-killed-pipeline",  # a kill mid-pipeline leaves a hole in every layer
    ),
]


@pytest.mark.parametrize(("snapshot", "expected"), SCENARIOS)
def test_rules(snapshot: Snapshot, expected: list[tuple[str, str, str, datetime, datetime | None]]) -> None:
    """Each rule reports exactly the expected findings, and nothing where there is no expectation."""
    assert summary(find_gaps(snapshot)) == expected


def test_findings_are_sorted_by_workspace_then_layer_order_then_subject() -> None:
    """Findings come bronze, silver, gold (not alphabetical) within each workspace, subjects sorted."""
    snapshot = snap(
        gold("g", (), None, ws="w2"),
        silver("s", (), 0, ws="w2"),
        table("src", "b", 1, ws="w2"),
        table("src", "a", 1, ws="w2"),
        run("src", "ok", 5, ws="w2"),
        gold("g", (), None, ws="w1"),
        silver("s", (), 0, ws="w1"),
        table("src", "z", 1, ws="w1"),
        run("src", "ok", 5, ws="w1"),
    )
    findings = find_gaps(snapshot)
    assert [(f.workspace_id, f.layer, f.subject) for f in findings] == [
        ("w1", "bronze", "src/z"),
        ("w1", "silver", "s"),
        ("w1", "gold", "g"),
        ("w2", "bronze", "src/a"),
        ("w2", "bronze", "src/b"),
        ("w2", "silver", "s"),
        ("w2", "gold", "g"),
    ]


def test_workspace_argument_reports_only_that_workspace() -> None:
    """``workspace=W`` returns W's findings only, and none for an unknown workspace."""
    snapshot = snap(
        run("crm", "ok", 5),
        table("crm", "o", None),
        run("crm", "ok", 5, ws="w2"),
        table("crm", "o", None, ws="w2"),
    )
    assert [f.workspace_id for f in find_gaps(snapshot, workspace="w2")] == ["w2"]
    assert find_gaps(snapshot, workspace="nope") == []


@pytest.mark.parametrize(
    ("snapshot", "action"),
    [
        # bronze missing: rerun the source
        (
            snap(run("crm", "ok", 5), table("crm", "o", None)),
            "Run source 'crm' to load bronze table 'crm/o', which it has never loaded.",
        ),
        # silver stale: rerun the transform
        (
            snap(table("crm", "o", 5), silver("stg", (), 1)),
            "Re-run silver transform 'stg' to pick up bronze data loaded after its last run.",
        ),
        # gold missing: first run of the transform
        (snap(silver("stg", (), 1), gold("rev", (), None)), "Run gold transform 'rev', which has never run."),
    ],
)
def test_action_is_one_sentence_naming_what_to_run(snapshot: Snapshot, action: str) -> None:
    """The action names the source or transform to run, in one sentence."""
    (finding,) = find_gaps(snapshot)
    assert finding.action == action


def test_finding_round_trips_through_dict() -> None:
    """``Finding.to_dict`` writes UTC ISO timestamps that ``from_dict`` reads back to an equal finding."""
    (finding,) = find_gaps(snap(run("crm", "ok", 5), table("crm", "o", 4)))
    data = finding.to_dict()
    assert data["expected_after"] == "2026-11-30T05:00:00+00:00"
    assert Finding.from_dict(data) == finding


# --------------------------------------------------------------------------- parsing


def _document() -> dict:
    return {
        "source_runs": [
            {
                "workspace_id": "w1",
                "source_id": "crm",
                "status": "ok",
                "started_at": "2026-11-30T07:00:00-03:00",
                "finished_at": None,
            }
        ],
        "bronze_tables": [
            {"workspace_id": "w1", "source_id": "crm", "table": "o", "selected": True, "processed_at": None},
            {
                "workspace_id": "w1",
                "source_id": "crm",
                "table": "p",
                "selected": True,
                "processed_at": "2026-11-30T09:00:00Z",
            },
        ],
        "transforms": [
            {
                "workspace_id": "w1",
                "transform_id": "stg",
                "layer": "silver",
                "inputs": None,
                "last_run_at": None,
            }
        ],
    }


def test_snapshot_from_dict_normalises_to_utc() -> None:
    """Offsets and ``Z`` are accepted and normalised to UTC; null inputs mean no listed inputs."""
    snapshot = Snapshot.from_dict(_document())
    assert snapshot.source_runs[0].started_at == at(10)
    assert snapshot.source_runs[0].started_at.utcoffset() == timedelta(0)
    assert snapshot.bronze_tables[1].processed_at == at(9)
    assert snapshot.transforms[0].inputs == ()


def test_snapshot_from_dict_accepts_aware_datetimes() -> None:
    """Rows read from PostgreSQL carry datetime objects, which parse like strings."""
    document = _document()
    document["source_runs"][0]["started_at"] = at(10)
    assert Snapshot.from_dict(document).source_runs[0].started_at == at(10)


def _with(path: tuple, value: object) -> dict:
    document = _document()
    target: dict = document
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # a bad timestamp is named by its field path and value
        (
            ("bronze_tables", 1, "processed_at"),
            "yesterday",
            "bronze_tables[1].processed_at: 'yesterday' is not an ISO 8601 timestamp with offset",
        ),
        # a timestamp without an offset is ambiguous
        (
            ("source_runs", 0, "started_at"),
            "2026-11-30T10:00:00",
            "source_runs[0].started_at: '2026-11-30T10:00:00' is not an ISO 8601 timestamp with offset",
        ),
        # a missing field
        (("bronze_tables", 0, "selected"), KeyError, "bronze_tables[0].selected: missing field"),
        # a missing top-level list
        (("transforms",), KeyError, "transforms: missing field"),
        # an unknown layer
        (("transforms", 0, "layer"), "bronz", "transforms[0].layer: 'bronz' is not one of 'silver', 'gold'"),
        # an unknown run status
        (
            ("source_runs", 0, "status"),
            "done",
            "source_runs[0].status: 'done' is not one of 'ok', 'failed', 'running'",
        ),
        # selected must be a JSON boolean
        (("bronze_tables", 0, "selected"), "yes", "bronze_tables[0].selected: 'yes' is not true or false"),
        # inputs must be an array of strings
        (("transforms", 0, "inputs"), "crm/o", "transforms[0].inputs: expected an array, got 'crm/o'"),
        # a row must be an object
        (("bronze_tables", 1), 7, "bronze_tables[1]: expected an object, got 7"),
        # ids are non-empty strings
        (("source_runs", 0, "workspace_id"), "", "source_runs[0].workspace_id: '' is not a non-empty string"),
        # the same table twice would be reported twice
        (
            ("bronze_tables", 1, "table"),
            "o",
            "bronze_tables[1]: duplicate of bronze_tables[0] (workspace_id 'w1', source_id 'crm', table 'o')",
        ),
    ],
)
def test_snapshot_from_dict_rejects_bad_input(path: tuple, value: object, message: str) -> None:
    """Bad input raises SnapshotError naming the field path and the bad value."""
    with pytest.raises(SnapshotError) as info:
        Snapshot.from_dict(_with(path, value))
    assert str(info.value) == message


def test_snapshot_error_is_a_value_error() -> None:
    """Callers that catch ValueError also catch SnapshotError."""
    assert issubclass(SnapshotError, ValueError)


# --------------------------------------------------------------------------- workspace isolation

WORKSPACES = ("w1", "w2", "w3")
_hours = st.integers(min_value=0, max_value=6).map(at)  # few values: equal times are common
_maybe_hours = st.none() | _hours
_workspace = st.sampled_from(WORKSPACES)
_source = st.sampled_from(("s1", "s2"))
_table = st.sampled_from(("a", "b", "c"))
_transform_id = st.sampled_from(("t1", "t2", "t3", "t4"))
_input = st.sampled_from(("s1/a", "s2/b", "a", "b", "c", "t1", "t2", "t3", "x"))

_runs = st.lists(
    st.builds(
        SourceRun,
        workspace_id=_workspace,
        source_id=_source,
        status=st.sampled_from(("ok", "failed", "running")),
        started_at=_hours,
        finished_at=_maybe_hours,
    ),
    max_size=10,
)
_tables = st.dictionaries(
    st.tuples(_workspace, _source, _table), st.tuples(st.booleans(), _maybe_hours), max_size=15
)
_TRANSFORM_LAYERS: tuple[TransformLayer, ...] = ("silver", "gold")
_transforms = st.dictionaries(
    st.tuples(_workspace, _transform_id),
    st.tuples(st.sampled_from(_TRANSFORM_LAYERS), st.lists(_input, max_size=3), _maybe_hours),
    max_size=10,
)


@st.composite
def snapshots(draw: st.DrawFn) -> Snapshot:
    tables = draw(_tables)
    transforms = draw(_transforms)
    return Snapshot(
        source_runs=tuple(draw(_runs)),
        bronze_tables=tuple(BronzeTable(w, s, t, sel, p) for (w, s, t), (sel, p) in tables.items()),
        transforms=tuple(
            Transform(w, tid, layer, tuple(i), last) for (w, tid), (layer, i, last) in transforms.items()
        ),
    )


@settings(max_examples=300, deadline=None)
@given(snapshots())
def test_workspace_findings_do_not_depend_on_other_workspaces(snapshot: Snapshot) -> None:
    """Each workspace's findings are the same with or without the other workspaces' rows."""
    full = find_gaps(snapshot)
    assert full == sorted(full, key=finding_sort_key)
    for ws in WORKSPACES:
        alone = find_gaps(snapshot.workspace(ws))
        assert alone == [f for f in full if f.workspace_id == ws]
        assert find_gaps(snapshot, workspace=ws) == alone
