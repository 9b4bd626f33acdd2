"""A crosscheck against a finished run of the real backend (`crosscheck --partner-run DIR`).

Real runs take time and a quiet machine, and the model changes more often than the real
code does: after a change of the model, the same real run can be compared again. The run
is taken only if it is of the same scenario as the one checked, section by section,
leaving out what only the model reads (its CPU costs, `[cpu]`; how it shares uplinks and
downlinks, `network.uplink_sharing` and `downlink_sharing`; its transport buffer,
`send_buffer`), and only if it was run on
the partner backend. It is copied into the crosscheck's folder, which stays whole. A
crosscheck taken up again (`--resume`) keeps the real runs it finished in its folder,
checked the same way.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from gossiplab.analysis.cpu_use import cpu_while_publishing
from gossiplab.analysis.results import (
    SUMMARY_FILE,
    load_results,
    table_file,
    with_later_columns,
    write_summary,
)
from gossiplab.errors import GossiplabError
from gossiplab.scenario import Scenario, scenario_to_toml

# Sections and fields only the model reads: a real run made before they changed still
# holds. The sharing disciplines and the transport's buffer are the model's descriptions
# of what the real kernel, streams and links do; no real backend reads them.
MODEL_ONLY = ("cpu",)
MODEL_ONLY_FIELDS = {"network": ("uplink_sharing", "downlink_sharing", "send_buffer")}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def differences(here: dict[str, Any], there: dict[str, Any], prefix: str = "") -> list[str]:
    """Each field whose value differs between two resolved scenarios, as
    "field (X there, Y here)", in key order; tables are compared field by field."""
    found = []
    for key in sorted(set(here) | set(there)):
        field = f"{prefix}{key}"
        a, b = here.get(key), there.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            found += differences(a, b, f"{field}.")
        elif a != b:
            found.append(f"{field} ({_shown(b)} there, {_shown(a)} here)")
    return found


def _comparable(toml_text: str) -> dict[str, Any]:
    data = tomllib.loads(toml_text)
    kept = {k: v for k, v in data.items() if k not in MODEL_ONLY}
    for section, fields in MODEL_ONLY_FIELDS.items():
        if isinstance(kept.get(section), dict):
            kept[section] = {k: v for k, v in kept[section].items() if k not in fields}
    return kept


def check_partner_run(folder: Path, expected: Scenario, partner: str) -> None:
    """Refuse `folder` unless it is a finished `partner` run of `expected` (apart from
    the model-only sections), naming what differs."""
    try:
        _, run_info, scenario_text = load_results(folder)
    except GossiplabError as e:
        raise GossiplabError(f"--partner-run: {e}") from None
    backend = run_info.get("backend")
    if backend != partner:
        raise GossiplabError(
            f"--partner-run {folder}: a run of the {backend} backend, not of the {partner}; "
            f"pass a {partner} run (a crosscheck's {partner}/ folder)"
        )
    found = differences(_comparable(scenario_to_toml(expected)), _comparable(scenario_text))
    if found:
        shown = "; ".join(found[:5]) + ("; ..." if len(found) > 5 else "")
        raise GossiplabError(
            f"--partner-run {folder}: a run of another scenario ({shown}); pass a run of "
            "this scenario, or leave --partner-run out to run the real nodes again"
        )


def adopt(folder: Path, destination: Path) -> dict[str, Any]:
    """Copy the partner run into the crosscheck's folder; its summary, with the CPU
    figures it lacks read from its tables as the model's are (a run made by an earlier
    version lacks what later versions read from the same samples, such as its threads'
    blocks); the figures it has are kept as they are."""
    shutil.copytree(folder, destination)
    summary: dict[str, Any] = json.loads((destination / SUMMARY_FILE).read_text("utf-8"))
    cpu = _cpu_from_tables(destination)
    kept = summary.get("cpu") or {}
    missing = {key: value for key, value in cpu.items() if key not in kept}
    if missing:
        summary["cpu"] = {**kept, **missing}
        write_summary(destination, summary)
    return summary


def _cpu_from_tables(folder: Path) -> dict[str, Any]:
    """A run's CPU section read from its resources and publishes tables alone; empty
    without resources (simnet writes none)."""
    resources = folder / table_file("resources")
    if not resources.is_file():
        return {}
    samples = with_later_columns(pl.read_parquet(resources), "resources")
    publishes = pl.read_parquet(folder / table_file("publishes"))
    return cpu_while_publishing(samples, publishes) or {}


def prepare_folder(out: Path, force: bool, resume: bool, partner_runs: Sequence[Path]) -> None:
    """Make the crosscheck's folder: replaced only with `force`, never when a finished
    run to be compared lies inside it; kept with `resume` but for the model's runs
    (`model/`, `model-2/`, ...), which are made again."""
    if force and resume:
        raise GossiplabError("--force replaces the folder, --resume keeps it: pass one of them")
    for folder in partner_runs:
        if out.resolve() in Path(folder).resolve().parents:
            raise GossiplabError(
                f"--partner-run {folder} is inside the crosscheck's folder {out}, which "
                "is replaced: copy the run elsewhere first, or choose another -o"
            )
    if out.exists() and resume:
        for folder in out.glob("model*"):
            if folder.name == "model" or folder.name.startswith("model-"):
                shutil.rmtree(folder, ignore_errors=True)
        return
    if out.exists():
        if not force:
            raise GossiplabError(
                f"{out} already exists; pass --force to replace it, --resume to keep its "
                "finished real runs, or choose another -o"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True)


def finished_run(folder: Path, expected: Scenario, partner: str) -> dict[str, Any] | None:
    """The summary of a finished `partner` run of `expected` kept in the crosscheck's
    folder (`--resume`), or None if there is none; one of another scenario is refused,
    naming the folder."""
    if not (folder / SUMMARY_FILE).is_file():
        shutil.rmtree(folder, ignore_errors=True)  # an unfinished run starts again
        return None
    try:
        check_partner_run(folder, expected, partner)
    except GossiplabError as e:
        raise GossiplabError(
            f"--resume: {folder} is not a run of this scenario ({e}); choose another -o, "
            "or pass --force to start again"
        ) from None
    summary: dict[str, Any] = json.loads((folder / SUMMARY_FILE).read_text("utf-8"))
    return summary
