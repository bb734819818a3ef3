"""Regenerates the bundled desktop tasks: their OSWorld JSON files, input files and gold files.

Run ``python -m rla_envs.desktop.tasks.build`` after editing a task here; it rewrites
``examples/<app>/<id>.json`` and ``files/<id>/*`` (spreadsheets with openpyxl, documents with python-docx,
text as is). The JSON follows OSWorld's task format unchanged, plus keys OSWorld ignores:

* ``rla_solution``: the scripted solution, a list of actions for the env (pyautogui code steps, then
  ``DONE`` or ``FAIL``), which scores 1 when played from the task's start state;
* ``rla_hints``: hint sentences the family's ``mutate`` may add to the instruction (easier) or remove;
* ``rla_variants`` / ``rla_variant``: alternative evaluators (``{"name", "level", "evaluator"}``; a higher
  ``level`` is stricter) and the one in use, which the family's ``mutate`` switches between.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rla_envs.desktop.tasks import EXAMPLES_DIR, FILES_DIR, app_tasks
from rla_envs.desktop.tasks.steps import (HOME, NAME_BOX, SAVE_OFFICE_CODE, bundled, command_eval, download_step,
                                          launch_steps, make_task, mkdir_step, office_postconfig, open_office_steps,
                                          open_step, text_eval, type_code, xterm_steps)

__all__ = ["TASKS", "build"]

# --------------------------------------------------------------------------- the tasks

def _tasks() -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []

    def add(*args: Any, **kwargs: Any) -> None:
        tasks.append(make_task(*args, **kwargs))

    # ---- text editing in mousepad -------------------------------------------------------------------
    tid = "rla-mousepad-append-line"
    path = f"{HOME}/shopping.txt"
    strict = text_eval(tid, path, "shopping_gold.txt")
    lenient = text_eval(tid, path, "shopping_gold.txt", ignore_blanks=True)
    add(tid, "mousepad",
        "The shopping list /home/user/shopping.txt is open in the text editor. Add 'milk' as a new last line "
        "and save the file.",
        [download_step(tid, "shopping.txt", path), open_step(path)],
        strict,
        ["pyautogui.hotkey('ctrl', 'end')", type_code("milk\n"), "pyautogui.hotkey('ctrl', 's')\ntime.sleep(0.5)",
         "DONE"],
        {"shopping.txt": "eggs\nbread\nbutter\n", "shopping_gold.txt": "eggs\nbread\nbutter\nmilk\n"},
        hints=["Ctrl+End moves the cursor to the end of the file and Ctrl+S saves it."],
        variants=[{"name": "exact", "level": 1, "evaluator": strict},
                  {"name": "ignore_blanks", "level": 0, "evaluator": lenient}])

    tid = "rla-mousepad-fix-typos"
    path = f"{HOME}/memo.txt"
    wrong = "Teh meeting moves to Friday.\nPlease bring teh budget notes.\nWe will review teh plan together.\n"
    right = wrong.replace("Teh", "The").replace("teh", "the")
    add(tid, "mousepad",
        "Fix the typos in /home/user/memo.txt, which is open in the text editor: every 'teh' should read 'the' "
        "(keep the capital T where the word starts a sentence). Save the file.",
        [download_step(tid, "memo.txt", path), open_step(path)],
        text_eval(tid, path, "memo_gold.txt"),
        ["pyautogui.hotkey('ctrl', 'a')", type_code(right), "pyautogui.hotkey('ctrl', 's')\ntime.sleep(0.5)", "DONE"],
        {"memo.txt": wrong, "memo_gold.txt": right},
        hints=["Three words need fixing, one on each line."])

    tid = "rla-mousepad-new-file"
    path = f"{HOME}/todo.txt"
    content = "call Ana\npay rent\nwater plants\n"
    add(tid, "mousepad",
        "Using the open text editor, create the file /home/user/todo.txt holding three lines: 'call Ana', "
        "'pay rent' and 'water plants', each ending with a line break.",
        launch_steps(["mousepad"], "Mousepad"),
        text_eval(tid, path, "todo_gold.txt"),
        [type_code(content), "pyautogui.hotkey('ctrl', 's')\ntime.sleep(1.5)",
         "pyautogui.hotkey('ctrl', 'a')\n" + type_code(path) + "\ntime.sleep(0.3)\npyautogui.press('enter')\n"
         "time.sleep(1.0)", "DONE"],
        {"todo_gold.txt": content},
        hints=["Ctrl+S opens the save dialog; type the full path into its name field and press Enter."])

    tid = "rla-mousepad-sort-lines"
    path = f"{HOME}/guests.txt"
    names = ["Priya", "Tomas", "Greta", "Wen", "Olu", "Bea"]
    add(tid, "mousepad",
        "Sort the names in /home/user/guests.txt (open in the text editor) alphabetically, one per line, "
        "and save the file.",
        [download_step(tid, "guests.txt", path), open_step(path)],
        text_eval(tid, path, "guests_gold.txt"),
        ["pyautogui.hotkey('ctrl', 'a')", type_code("".join(f"{n}\n" for n in sorted(names))),
         "pyautogui.hotkey('ctrl', 's')\ntime.sleep(0.5)", "DONE"],
        {"guests.txt": "".join(f"{n}\n" for n in names), "guests_gold.txt": "".join(f"{n}\n" for n in sorted(names))},
        hints=["The first name of the sorted list is Bea."])

    # ---- files and the terminal -----------------------------------------------------------------------
    tid = "rla-os-make-dirs"
    target = f"{HOME}/projects/alpha/src"
    add(tid, "os",
        "Create the directory /home/user/projects/alpha/src (with its parent directories). A terminal is open.",
        xterm_steps(),
        command_eval(f"test -d {target} && echo present || echo absent", ["present"], ["absent"]),
        [type_code("mkdir -p ~/projects/alpha/src\n"), "time.sleep(0.5)", "DONE"],
        {}, hints=["mkdir -p creates the parent directories too."], related_apps=["terminal"])

    tid = "rla-os-rename-file"
    add(tid, "os",
        "In /home/user/Documents, rename report_draft.txt to report_final.txt. A terminal is open.",
        [mkdir_step(f"{HOME}/Documents"), download_step(tid, "report_draft.txt", f"{HOME}/Documents/report_draft.txt"),
         *xterm_steps()],
        command_eval(f"ls {HOME}/Documents", ["report_final.txt"], ["report_draft.txt"]),
        [type_code("mv ~/Documents/report_draft.txt ~/Documents/report_final.txt\n"), "time.sleep(0.5)", "DONE"],
        {"report_draft.txt": "Q3 report: revenue up 4%.\n"},
        hints=["The mv command renames files."], related_apps=["terminal"])

    tid = "rla-os-count-errors"
    log = "".join(f"2026-11-0{1 + i % 9} {'ERROR' if i % 3 == 0 else 'INFO'} event {i}\n" for i in range(20))
    count = sum("ERROR" in line for line in log.splitlines())
    exact = {"func": "exact_match",
             "result": {"type": "vm_command_line", "command": f"cat {HOME}/error_count.txt", "shell": True},
             "expected": {"type": "rule", "rules": {"expected": f"{count}\n"}}}
    trimmed = {"func": "exact_match",
               "result": {"type": "vm_command_line", "command": f"tr -d '[:space:]' < {HOME}/error_count.txt",
                          "shell": True},
               "expected": {"type": "rule", "rules": {"expected": f"{count}"}}}
    add(tid, "os",
        "Count the lines of /home/user/logs/app.log that contain the word ERROR and write just that number, "
        "followed by a line break, to /home/user/error_count.txt. A terminal is open.",
        [mkdir_step(f"{HOME}/logs"), download_step(tid, "app.log", f"{HOME}/logs/app.log"), *xterm_steps()],
        exact,
        [type_code("grep -c ERROR ~/logs/app.log > ~/error_count.txt\n"), "time.sleep(0.5)", "DONE"],
        {"app.log": log},
        hints=["grep -c counts matching lines."], related_apps=["terminal"],
        variants=[{"name": "exact", "level": 1, "evaluator": exact},
                  {"name": "ignore_whitespace", "level": 0, "evaluator": trimmed}])

    tid = "rla-os-make-executable"
    script = f"{HOME}/bin/backup.sh"
    add(tid, "os",
        "Make the script /home/user/bin/backup.sh executable. A terminal is open.",
        [mkdir_step(f"{HOME}/bin"), download_step(tid, "backup.sh", script), *xterm_steps()],
        command_eval(f"test -x {script} && echo is-executable || echo not-executable",
                      ["is-executable"], ["not-executable"]),
        [type_code("chmod +x ~/bin/backup.sh\n"), "time.sleep(0.5)", "DONE"],
        {"backup.sh": "#!/bin/sh\ntar czf \"$HOME/backup.tgz\" \"$HOME/Documents\"\n"},
        hints=["chmod +x sets the executable bit."], related_apps=["terminal"])

    tid = "rla-os-infeasible-registry"
    add(tid, "os",
        "Open the Windows Registry Editor on this computer and set the key HKEY_CURRENT_USER\\Console\\"
        "QuickEdit to 0.",
        xterm_steps(),
        {"func": "infeasible"},
        ["FAIL"],
        {}, hints=["This computer runs Linux."], related_apps=["terminal"])

    # ---- spreadsheets in LibreOffice Calc --------------------------------------------------------------
    tid = "rla-calc-sum-total"
    path = f"{HOME}/sales.xlsx"
    months = [("Jan", 120), ("Feb", 95), ("Mar", 143), ("Apr", 88), ("May", 160), ("Jun", 131)]
    rows = [["Month", "Sales"], *map(list, months), ["Total", None]]
    gold = [r[:] for r in rows]
    gold[-1][1] = sum(v for _, v in months)
    add(tid, "libreoffice_calc",
        "In /home/user/sales.xlsx, open in LibreOffice Calc, put the total of the monthly sales (B2:B7) into "
        "cell B8 using a formula, and save the file in its current format.",
        [download_step(tid, "sales.xlsx", path), *open_office_steps(path, "sales.xlsx - LibreOffice Calc")],
        _calc_eval(tid, path, "sales_gold.xlsx", "sales.xlsx - LibreOffice Calc"),
        [NAME_BOX + type_code("B8\n"), type_code("=SUM(B2:B7)\n"), SAVE_OFFICE_CODE, "DONE"],
        {"sales.xlsx": rows, "sales_gold.xlsx": gold},
        hints=["Ctrl+Shift+F5 jumps to the Name Box, where you can type a cell address."],
        related_apps=["libreoffice calc"])

    tid = "rla-calc-fill-formula"
    path = f"{HOME}/orders.xlsx"
    items = [("Pens", 12, 1.5), ("Paper", 4, 6.25), ("Stapler", 2, 9.5), ("Tape", 7, 2.0), ("Folders", 10, 0.75)]
    rows = [["Item", "Quantity", "Unit price", "Amount"], *[[n, q, p, None] for n, q, p in items]]
    gold = [["Item", "Quantity", "Unit price", "Amount"], *[[n, q, p, q * p] for n, q, p in items]]
    add(tid, "libreoffice_calc",
        "In /home/user/orders.xlsx (open in LibreOffice Calc), fill D2:D6 with formulas giving each row's "
        "amount, Quantity times Unit price. Save the file in its current format.",
        [download_step(tid, "orders.xlsx", path), *open_office_steps(path, "orders.xlsx - LibreOffice Calc")],
        _calc_eval(tid, path, "orders_gold.xlsx", "orders.xlsx - LibreOffice Calc"),
        [NAME_BOX + type_code("D2\n"), type_code("=B2*C2\n"), NAME_BOX + type_code("D2:D6\n"), "pyautogui.hotkey('ctrl', 'd')",
         SAVE_OFFICE_CODE, "DONE"],
        {"orders.xlsx": rows, "orders_gold.xlsx": gold},
        hints=["Write =B2*C2 in D2, select D2:D6 and press Ctrl+D to fill it down."],
        related_apps=["libreoffice calc"])

    tid = "rla-calc-sort-scores"
    path = f"{HOME}/scores.xlsx"
    people = [("Maya", 71), ("Jonas", 94), ("Ikram", 58), ("Femi", 83), ("Chloe", 90), ("Ravi", 66)]
    ordered = sorted(people, key=lambda p: -p[1])
    rows = [["Name", "Score"], *map(list, people)]
    gold = [["Name", "Score"], *map(list, ordered)]
    add(tid, "libreoffice_calc",
        "Sort the rows of /home/user/scores.xlsx (open in LibreOffice Calc) by Score, highest first, keeping "
        "the header in row 1 and each name with its score. Save the file in its current format.",
        [download_step(tid, "scores.xlsx", path), *open_office_steps(path, "scores.xlsx - LibreOffice Calc")],
        _calc_eval(tid, path, "scores_gold.xlsx", "scores.xlsx - LibreOffice Calc"),
        [NAME_BOX + type_code("A2\n"), type_code("".join(f"{n}\t{s}\n" for n, s in ordered)), SAVE_OFFICE_CODE, "DONE"],
        {"scores.xlsx": rows, "scores_gold.xlsx": gold},
        hints=["Data > Sort sorts a selected range; choose Score, descending."],
        related_apps=["libreoffice calc"])

    tid = "rla-calc-bold-header"
    path = f"{HOME}/inventory.xlsx"
    stock = [["Part", "Bin", "Count"], ["Bolt", "A3", 140], ["Nut", "A4", 220], ["Washer", "B1", 75],
             ["Hinge", "C2", 12]]
    add(tid, "libreoffice_calc",
        "Make the header cells A1:C1 of /home/user/inventory.xlsx (open in LibreOffice Calc) bold, change "
        "nothing else, and save the file in its current format.",
        [download_step(tid, "inventory.xlsx", path), *open_office_steps(path, "inventory.xlsx - LibreOffice Calc")],
        _calc_eval(tid, path, "inventory_gold.xlsx", "inventory.xlsx - LibreOffice Calc",
                   extra_rules=[{"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["font_bold"]}]),
        [NAME_BOX + type_code("A1:C1\n"), "pyautogui.hotkey('ctrl', 'b')", SAVE_OFFICE_CODE, "DONE"],
        {"inventory.xlsx": stock, "inventory_gold.xlsx": {"rows": stock, "bold_rows": [1]}},
        hints=["Select A1:C1 through the Name Box (Ctrl+Shift+F5) and press Ctrl+B."],
        related_apps=["libreoffice calc"])

    # ---- a document in LibreOffice Writer --------------------------------------------------------------
    tid = "rla-writer-add-closing"
    path = f"{HOME}/letter.docx"
    body = ["Dear Mr. Okafor,", "Thank you for the quick delivery of the chairs.",
            "We look forward to working with you again."]
    add(tid, "libreoffice_writer",
        "Add a new last paragraph reading 'Kind regards, Lena' to /home/user/letter.docx (open in LibreOffice "
        "Writer) and save it in Word format.",
        [download_step(tid, "letter.docx", path), *open_office_steps(path, "letter.docx - LibreOffice Writer")],
        _docx_eval(tid, path, "letter_gold.docx", "letter.docx - LibreOffice Writer"),
        ["pyautogui.hotkey('ctrl', 'end')", "pyautogui.press('enter')\n" + type_code("Kind regards, Lena"),
         SAVE_OFFICE_CODE, "DONE"],
        {"letter.docx": body, "letter_gold.docx": body + ["Kind regards, Lena"]},
        hints=["Ctrl+End jumps to the end of the document."], related_apps=["libreoffice writer"])

    tid = "rla-writer-insert-title"
    path = f"{HOME}/minutes.docx"
    body = ["Present: Ada, Bo, Cy.", "Decisions: the picnic is on June 3.", "Next meeting: May 20."]
    add(tid, "libreoffice_writer",
        "Insert a new first paragraph reading 'Club Minutes' at the top of /home/user/minutes.docx (open in "
        "LibreOffice Writer), above the existing text, and save it in Word format.",
        [download_step(tid, "minutes.docx", path), *open_office_steps(path, "minutes.docx - LibreOffice Writer")],
        _docx_eval(tid, path, "minutes_gold.docx", "minutes.docx - LibreOffice Writer"),
        ["pyautogui.hotkey('ctrl', 'home')", type_code("Club Minutes") + "\npyautogui.press('enter')",
         SAVE_OFFICE_CODE, "DONE"],
        {"minutes.docx": body, "minutes_gold.docx": ["Club Minutes"] + body},
        hints=["Ctrl+Home jumps to the start of the document."], related_apps=["libreoffice writer"])
    return tasks


def _calc_eval(task_id: str, path: str, gold: str, title: str, extra_rules: list | None = None) -> dict[str, Any]:
    rules = [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}, *(extra_rules or [])]
    return {"postconfig": office_postconfig(title), "func": "compare_table",
            "result": {"type": "vm_file", "path": path, "dest": Path(path).name},
            "expected": {"type": "cloud_file", "path": bundled(task_id, gold), "dest": gold},
            "options": {"rules": rules}}


def _docx_eval(task_id: str, path: str, gold: str, title: str) -> dict[str, Any]:
    return {"postconfig": office_postconfig(title), "func": "compare_docx_files",
            "result": {"type": "vm_file", "path": path, "dest": Path(path).name},
            "expected": {"type": "cloud_file", "path": bundled(task_id, gold), "dest": gold}}


TASKS = _tasks() + app_tasks.tasks()
"""Every bundled task: ``{"app", "json", "files"}`` (file contents: text, spreadsheet rows or paragraphs)."""


# --------------------------------------------------------------------------- writing

def _write_file(path: Path, content: Any) -> None:
    if path.suffix == ".xlsx":
        import openpyxl
        import openpyxl.styles

        rows, bold_rows = (content["rows"], content["bold_rows"]) if isinstance(content, dict) else (content, [])
        workbook = openpyxl.Workbook()
        sheet = workbook.active
        sheet.title = "Sheet1"
        for row in rows:
            sheet.append(row)
        for number in bold_rows:
            for cell in sheet[number]:
                cell.font = openpyxl.styles.Font(bold=True)
        workbook.save(path)
    elif path.suffix == ".docx":
        import docx

        document = docx.Document()
        for paragraph in content:
            document.add_paragraph(paragraph)
        document.save(path)
    elif path.suffix == ".pptx":
        import pptx

        deck = pptx.Presentation()
        for title, text in content:  # a title-and-content slide each
            slide = deck.slides.add_slide(deck.slide_layouts[1])
            slide.shapes.title.text = title
            slide.placeholders[1].text = text
        deck.save(path)
    elif path.suffix == ".png":
        from PIL import Image

        width, height = content["size"]
        image = Image.new("RGB", (width, height), tuple(content["left"]))
        image.paste(tuple(content["right"]), (width // 2, 0, width, height))
        image.save(path)
    elif path.suffix == ".wav":
        _write_tone(path, content["seconds"], content["rate"])
    else:
        path.write_text(content, encoding="utf-8")


def _write_tone(path: Path, seconds: int, rate: int) -> None:
    """A mono 8-bit 440 Hz sine tone."""
    import math
    import wave

    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(1)
        out.setframerate(rate)
        out.writeframes(bytes(128 + round(100 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(seconds * rate)))


def build(examples: Path = EXAMPLES_DIR, files: Path = FILES_DIR) -> list[Path]:
    """Write every bundled task's JSON and files (replacing what was there); return the JSON paths."""
    written = []
    for directory in (examples, files):
        if directory.exists():
            shutil.rmtree(directory)
    for task in TASKS:
        task_id = task["json"]["id"]
        json_path = examples / task["app"] / f"{task_id}.json"
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(task["json"], indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(json_path)
        for name, content in task["files"].items():
            file_path = files / task_id / name
            file_path.parent.mkdir(parents=True, exist_ok=True)
            _write_file(file_path, content)
    return written


if __name__ == "__main__":
    for written_path in build():
        print(written_path.relative_to(EXAMPLES_DIR.parent))
