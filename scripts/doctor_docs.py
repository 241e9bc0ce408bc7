#!/usr/bin/env python3
"""Regenerates the "## Codes" section of docs/DOCTOR.md from src/doctor/knowledge_base.json.

Run after editing the knowledge base: python3 scripts/doctor_docs.py (the doctor tests check that every code
is documented)."""
import json
import pathlib

root = pathlib.Path(__file__).resolve().parent.parent
kb = json.loads((root / "src/doctor/knowledge_base.json").read_text())
doc_path = root / "docs/DOCTOR.md"
doc = doc_path.read_text()
marker = "## Codes\n"
head = doc[: doc.index(marker)] if marker in doc else doc + "\n"
out = [head, marker, "\nValues in braces come from the finding's evidence. The same text is in "
       "`src/doctor/knowledge_base.json` (this section is generated from it by `scripts/doctor_docs.py`).\n\n"]
out.append("### Failure classes\n\n| class | what | codes |\n| --- | --- | --- |\n")
for cls, desc in kb["classes"].items():
    codes = [c for c, e in kb["codes"].items() if e["class"] == cls]
    out.append(f"| `{cls}` | {desc} | {', '.join('`' + c + '`' for c in codes)} |\n")
out.append("\n")
for level in (1, 2, 3, 4):
    out.append(f"### Layer {level} codes\n\n")
    for code, e in kb["codes"].items():
        if e["level"] != level:
            continue
        out.append(f"#### `{code}` — {e['title']}\n\n")
        out.append(f"*severity* {e['severity']} · *class* `{e['class']}`\n\n")
        out.append(f"**Means.** {e['meaning']}\n\n")
        out.append(f"**Fix.** {e['remediation']}\n\n")
doc_path.write_text("".join(out).rstrip("\n") + "\n")
print(f"{doc_path}: {len(kb['codes'])} codes")
