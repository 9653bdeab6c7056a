"""Pages of the docs site generated from the repository, so they cannot drift from it.

``benchmarks`` renders the current number of each claim, one table per task, from the result files
``docs/benchmarks.json`` names, each with the command that reproduces it (the result file's own record
of the command that wrote it; for a file that holds none, the row's ``command``, from the lab
notebook). ``model_cards`` renders one card per shipped model from the model folder's own
``config.json`` (architecture, backbone, what it was trained on and from, its size) and
``docs/model-cards.json`` (what it is for, the command that reproduces it, and which result file and
key hold each of its scores). Every number, date, machine and command is read from the result file,
never typed twice. ``readme_models`` renders the README's "which model for what" table from the cards'
``readme`` entries. ``with_samples`` rewrites the sample responses under the serve guide's ``curl``
commands with what the service answers them.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

CARDS = Path("docs") / "model-cards.json"
BENCHMARKS = Path("docs") / "benchmarks.json"


def lookup(data: Any, key: str) -> Any:
    """``data[k1][k2]...`` for ``key`` = ``k1.k2...``; a list takes an index. Keys may hold dots
    themselves (``p@1`` does not, ``hits@10`` neither): the longest key present wins."""
    parts = key.split(".")
    while parts:
        for n in range(len(parts), 0, -1):
            head = ".".join(parts[:n])
            if isinstance(data, dict) and head in data:
                data, parts = data[head], parts[n:]
                break
            if isinstance(data, list) and n == 1 and head.isdigit() and int(head) < len(data):
                data, parts = data[int(head)], parts[1:]
                break
        else:
            raise KeyError(key)
    return data


def _provenance(result: dict[str, Any]) -> tuple[str, str, str]:
    """(date, machine, command) of a result file, wherever its writer put them ("" where none)."""
    date = machine = command = ""
    for where in (result, result.get("run", {}), result.get("provenance", {})):
        if isinstance(where, dict):
            if "machine" in where and not machine:
                date, machine = str(where.get("date", "")), str(where["machine"])
            command = command or str(where.get("command") or "")
    return date, machine, command


def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if abs(value) < 1 else f"{value:.1f}"
    return str(value)


def _size(folder: Path) -> str:
    total = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return f"{total / 1e6:.1f} MB"


_PRECISIONS = re.compile(r"\b(fp32|bf16|fp16|int8)\b")


def _read(root: Path, where: str, score: dict[str, Any]) -> tuple[str, str, str]:
    """(value, date, machine) of ``score``'s ``key`` in its ``file``; ValueError naming ``where``, and
    where the row's label (``set`` or ``claim``) names a precision the result file says it did not run
    in (a bf16 speed was labelled fp32)."""
    result = _result(root, where, score["file"])
    try:
        value = lookup(result, score["key"])
    except KeyError:
        raise ValueError(f"{where}: {score['file']} has no {score['key']!r}") from None
    said = _PRECISIONS.findall(str(score.get("set") or score.get("claim") or ""))
    ran = _ran_in(result, score["key"])
    if said and ran is not None and ran not in said:
        raise ValueError(f"{where}: the row says {said[0]}, but {score['file']} ran in {ran}")
    date, machine, _ = _provenance(result)
    return _number(value), date, machine


def _ran_in(result: dict[str, Any], key: str) -> str | None:
    """The precision recorded nearest to ``key`` along its path (a ``precision`` entry), if any."""
    parts, ran = key.split("."), None
    for n in range(len(parts)):
        with contextlib.suppress(KeyError):
            found = lookup(result, ".".join(parts[:n])) if n else result
            if isinstance(found, dict) and isinstance(found.get("precision"), str):
                ran = found["precision"]
    return ran


def _result(root: Path, where: str, file: str) -> dict[str, Any]:
    path = root / file
    if not path.is_file():
        raise ValueError(f"{where}: {file} is missing")
    return json.loads(path.read_text(encoding="utf-8"))


def _command(root: Path, where: str, row: dict[str, Any]) -> str:
    """The command that reproduces ``row``'s claim, as a table cell: the one its result file records,
    else the row's own ``command``; ValueError naming ``where`` when there is neither."""
    _, _, command = _provenance(_result(root, where, row["file"]))
    command = command or row.get("command", "")
    if not command:
        raise ValueError(
            f"{where}: {row['file']} records no command; give the row the one docs/RESULTS.md names"
        )
    # Writers record argv joined by spaces: an empty argument (``--precisions ''``) shows as two spaces.
    words = " ".join(word or "''" for word in command.strip().split(" "))
    return "`" + words.replace("|", "\\|") + "`"


def benchmarks(root: Path) -> str:
    """The Benchmarks page: per section, each claim's number from its result file, then its plots."""
    spec = json.loads((root / BENCHMARKS).read_text(encoding="utf-8"))
    out = ["# Benchmarks", "", spec["intro"], ""]
    for section in spec["sections"]:
        out += [f"## {section['title']}", ""]
        if "columns" in section:  # one row per claim, one column per metric, from the same file
            out += _compare(root, section)
            continue
        out += [
            "| claim | split | metric | value | date | machine | file | command |",
            "|---|---|---|---|---|---|---|---|",
        ]
        where = f"{BENCHMARKS}: {section['title']}"
        for row in section["rows"]:
            value, date, machine = _read(root, where, row)
            out.append(
                f"| {row['claim']} | {row['split']} | {row['metric']} | {value} | {date} | {machine} "
                f"| `{row['file']}` | {_command(root, where, row)} |"
            )
        for entry in section.get("plots", []):  # a file, or {"file", "caption"}: what it plots, on what split
            plot = entry if isinstance(entry, str) else entry["file"]
            if not (root / plot).is_file():
                raise ValueError(f"{BENCHMARKS}: {section['title']}: {plot} is missing")
            out += ["", f"![{Path(plot).stem}](../{plot})"]  # from docs/
            if isinstance(entry, dict) and entry.get("caption"):
                out += ["", f"*{entry['caption']}*"]
        out.append("")
    return "\n".join(out)


def _compare(root: Path, section: dict[str, Any]) -> list[str]:
    """A section whose rows are claims and whose ``columns`` are metrics (``metric``, ``key``), each
    row's values read from its one ``file``; then the section's ``note``."""
    columns = section["columns"]
    out = [
        "| claim | " + " | ".join(c["metric"] for c in columns) + " | date | machine | file | command |",
        "|---" * (len(columns) + 5) + "|",
    ]
    where = f"{BENCHMARKS}: {section['title']}"
    for row in section["rows"]:
        cells = [_read(root, where, {"file": row["file"], "key": c["key"]}) for c in columns]
        _, date, machine = cells[0]
        values = " | ".join(value for value, _, _ in cells)
        command = _command(root, where, row)
        out.append(f"| {row['claim']} | {values} | {date} | {machine} | `{row['file']}` | {command} |")
    return [*out, "", section["note"], ""] if "note" in section else [*out, ""]


README_START, README_END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"


def readme_table(root: Path) -> str:
    """The README's short benchmark table: the rows of ``docs/benchmarks.json`` marked ``readme``."""
    spec = json.loads((root / BENCHMARKS).read_text(encoding="utf-8"))
    out = ["| claim | split | metric | value | machine |", "|---|---|---|---|---|"]
    for section in spec["sections"]:
        for row in section["rows"]:
            if row.get("readme"):
                value, _, machine = _read(root, f"{BENCHMARKS}: {section['title']}", row)
                out.append(
                    f"| {row['claim']} | {row['split']} | {row['metric']} | {value} | {_cpu(machine)} |"
                )
    return "\n".join(out)


def _cpu(machine: str) -> str:
    """A result file's machine in short: the CPU's name, and AMX where it has it."""
    return machine.split(";")[0] + (" (AMX)" if "amx" in machine else "")


def with_readme_table(root: Path, readme: str) -> str:
    """``readme`` with the text between its benchmark markers replaced by ``readme_table``."""
    return _between(readme, README_START, README_END, readme_table(root))


def _between(readme: str, start_marker: str, end_marker: str, text: str) -> str:
    head, start, rest = readme.partition(start_marker)
    _, end, tail = rest.partition(end_marker)
    if not start or not end:
        raise ValueError(f"README.md lacks the markers {start_marker} ... {end_marker}")
    return f"{head}{start}\n{text}\n{end}{tail}"


MODELS_START, MODELS_END = "<!-- models:start -->", "<!-- models:end -->"


def readme_models(root: Path, shipped: dict[str, Path]) -> str:
    """The README's "which model for what" table: a row per card of ``docs/model-cards.json`` with a
    ``readme`` entry (its task, speed class, and which of its scores show speed and quality), sizes
    measured from the model folders, numbers read from the result files."""
    cards = json.loads((root / CARDS).read_text(encoding="utf-8"))
    out = [
        "| model | for | size on disk | speed (2 CPU threads) | quality |",
        "|---|---|---|---|---|",
    ]
    for name, card in cards.items():
        entry = card.get("readme")
        if entry is None:
            continue
        where = f"{CARDS}: {name}: readme"
        speed, quality = (card["scores"][entry[k]] for k in ("speed_score", "quality_score"))
        pace, _, machine = _read(root, where, speed)
        value, _, _ = _read(root, where, quality)
        size = " ".join(filter(None, [_size(shipped[name]), entry.get("size")]))
        out.append(
            f"| [`{name}`](docs/models.md#{name}) | {entry['task']} | {size} "
            f"| {entry['speed']}: {pace} {speed['metric']}, {speed['set']} ({_cpu(machine)}) "
            f"| {value} {quality['metric']}, {quality['set']} |"
        )
    return "\n".join(out)


def with_readme_models(root: Path, shipped: dict[str, Path], readme: str) -> str:
    """``readme`` with the text between its model markers replaced by ``readme_models``."""
    return _between(readme, MODELS_START, MODELS_END, readme_models(root, shipped))


def model_cards(root: Path, shipped: dict[str, Path]) -> str:
    """The Models page: a card per shipped model (``shipped``: name -> folder); a model without a card,
    a card without a model, or a score whose file or key is missing raises ValueError."""
    cards = json.loads((root / CARDS).read_text(encoding="utf-8"))
    if set(cards) != set(shipped):
        raise ValueError(
            f"{CARDS}: cards for {sorted(set(cards) - set(shipped))} (not shipped), none for "
            f"{sorted(set(shipped) - set(cards))}"
        )
    out = [
        "# Models",
        "",
        "Every model sieveqa ships, loaded by name (`load_ranker(NAME)`, `--model NAME`, `--reranker NAME`,"
        " ...). Each card is generated from the model folder's `config.json` and the result files named in"
        " `docs/model-cards.json`: the numbers, dates and machines are those files'. Speeds compare only"
        " within one machine. *reproduce* trains the model again (hours); *check* scores the shipped weights"
        " on the first score's set (a minute or two). A result file's command may name the run folder"
        " (`runs/...`) that made the weights now shipped under the card's name.",
        "",
    ]
    for name, card in cards.items():
        config = json.loads((shipped[name] / "config.json").read_text(encoding="utf-8"))
        training = config.get("training", {})
        body = config.get("body_from") or training.get("init") or "-"
        low_rank = config.get("low_rank")
        stored = f"{config.get('dtype', 'float16')}"
        if low_rank:
            stored += f", body changes at rank {low_rank['rank']} over the installed base"
        out += [
            f"## `{name}`",
            "",
            card["what"],
            "",
            "| | |",
            "|---|---|",
            f"| kind | {config['sieveqa_model']} over `{config['config'].get('backbone')}` |",
            f"| trained on | `{training.get('train', '-')}` (dev `{training.get('dev') or '-'}`) |",
            f"| started from | `{body}` |",
            f"| stored | {_size(shipped[name])} ({stored}) |",
            f"| reproduce | `{card['reproduce']}` |"
            if card["reproduce"].startswith("make ")
            else f"| reproduce | {card['reproduce']} |",
            *([f"| check the shipped weights | `{card['check']}` |"] if card.get("check") else []),
            "",
        ]
        if card["scores"]:
            out += ["| set | metric | value | date | machine |", "|---|---|---|---|---|"]
            for score in card["scores"]:
                value, date, machine = _read(root, f"{CARDS}: {name}", score)
                out.append(f"| {score['set']} | {score['metric']} | {value} | {date} | {machine} |")
            out.append("")
    return "\n".join(out)


SERVE_GUIDE = Path("docs") / "guides" / "serve.md"
#: A curl to the local service (continued over lines ending in a backslash), then a comment line that
#: starts like JSON: that line is the sample response the guide shows for it.
_SAMPLE = re.compile(
    r"^curl -s localhost:8000(?P<route>/\w+)(?P<args>(?:.*\\\n)*.*)\n# (?P<sample>[\[{].*)$", re.M
)
#: Decimal places of the scores in a sample: fp32 on another CPU moves them in the sixth or so.
SAMPLE_PLACES = 4


def samples(text: str) -> list[tuple[str, Any, str]]:
    """(route, request body, sample line) of each curl in ``text`` that shows its response."""
    out = []
    for m in _SAMPLE.finditer(text):
        body = re.search(r"-d '([^']*)'", m["args"])
        if body is None:
            raise ValueError(f"the curl to {m['route']} above {m['sample'][:40]}... sends no -d '{{...}}'")
        out.append((m["route"], json.loads(body[1]), m["sample"]))
    return out


def rounded(value: Any, places: int = SAMPLE_PLACES) -> Any:
    """``value`` with every float in it rounded to ``places``."""
    if isinstance(value, float):
        return round(value, places)
    if isinstance(value, list):
        return [rounded(v, places) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v, places) for k, v in value.items()}
    return value


def sample_line(response: Any) -> str:
    """A response as the guide shows it: compact JSON, as the service sends it, floats rounded."""
    return json.dumps(rounded(response), separators=(",", ":"), ensure_ascii=False)


def with_samples(text: str, respond: Callable[[str, Any], Any]) -> str:
    """``text`` with each curl's sample line replaced by ``respond(route, body)``'s response."""
    for route, body, sample in samples(text):
        text = text.replace(f"# {sample}\n", f"# {sample_line(respond(route, body))}\n", 1)
    return text


@contextlib.contextmanager
def served(model: str = "default") -> Iterator[Callable[[str, Any], Any]]:
    """``respond(route, body)``: the JSON the service over the shipped ``model`` answers a POST with,
    in fp32 (bf16, the default on CPUs that have it, rounds differently on each kind of CPU)."""
    from fastapi.testclient import TestClient

    from sieveqa.serving import Service, create_app

    service = Service.load(model, precision="fp32", warm_up=False)
    with TestClient(create_app(service)) as client:

        def respond(route: str, body: Any) -> Any:
            response = client.post(route, json=body)
            response.raise_for_status()
            return response.json()

        yield respond


GENERATED = "<!-- generated by python tools/docs_pages.py from {source}: edit that, not this page -->\n\n"


def generated_pages(root: Path, shipped: dict[str, Path]) -> dict[Path, str]:
    """The pages this module writes (path under ``root`` -> text): Models and Benchmarks, kept in the
    repository so they read on GitHub as on the site."""
    return {
        Path("docs") / "models.md": GENERATED.format(source=CARDS.as_posix()) + model_cards(root, shipped),
        Path("docs") / "benchmarks.md": GENERATED.format(source=BENCHMARKS.as_posix()) + benchmarks(root),
    }


if __name__ == "__main__":  # python tools/docs_pages.py: the README's tables, the two pages, the samples
    import sys

    ROOT = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(ROOT))
    from sieveqa.models.zoo import SHIPPED

    README = ROOT / "README.md"
    readme = with_readme_table(ROOT, README.read_text(encoding="utf-8"))
    README.write_text(with_readme_models(ROOT, SHIPPED, readme), encoding="utf-8")
    for path, text in generated_pages(ROOT, SHIPPED).items():
        (ROOT / path).write_text(text, encoding="utf-8")
    with served() as respond:
        guide = ROOT / SERVE_GUIDE
        guide.write_text(with_samples(guide.read_text(encoding="utf-8"), respond), encoding="utf-8")
