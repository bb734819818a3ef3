"""Files the long-tail metric tests write: LibreOffice settings, city workbooks, HTML pages, slide masters."""

from __future__ import annotations

import zipfile
from pathlib import Path

_XCU_HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
             'xmlns:xs="http://www.w3.org/2001/XMLSchema">\n')


def write_xcu(path: Path, fonts: dict[str, str], extra_path: str | None = None) -> str:
    """A ``registrymodifications.xcu`` setting Writer's default fonts (``{"Standard": "Times New Roman"}``)."""
    items = [f'<item oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="{name}" oor:op="fuse">'
             f'<value>{font}</value></prop></item>' for name, font in fonts.items()]
    if extra_path:
        items.append(f'<item oor:path="{extra_path}"><prop oor:name="Standard" oor:op="fuse">'
                     f'<value>Comic Sans</value></prop></item>')
    path.write_text(_XCU_HEAD + "\n".join(items) + "\n</oor:items>\n", encoding="utf-8")
    return str(path)


def write_cities(path: Path, cities: list) -> str:
    """A workbook whose active sheet lists conference, year and city (column C) from row 2."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Conference", "Year", "City"])
    for index, city in enumerate(cities):
        sheet.append(["ICML", 2013 + index, city])
    book.save(path)
    return str(path)


_MASTER = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
           '<p:sldMaster xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
           'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree>{fills}'
           '</p:spTree></p:cSld></p:sldMaster>')


def write_master(path: Path, colours: list[str]) -> str:
    """A minimal .pptx zip whose first slide master has one solid fill of each colour (``"FF0000"``), in order."""
    fills = "".join(f'<p:sp><p:spPr><a:solidFill><a:srgbClr val="{c}"/></a:solidFill></p:spPr></p:sp>'
                    for c in colours)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("ppt/slideMasters/slideMaster1.xml", _MASTER.format(fills=fills))
    return str(path)


def write_word_table(path: Path, words: list[tuple[str, tuple[int, int, int] | None]], title: str = "Dolch words") -> str:
    """A .docx with a title paragraph and a one-row table, one word a cell, each run coloured as given (None: no
    colour of its own)."""
    import docx
    from docx.shared import RGBColor

    document = docx.Document()
    document.add_paragraph(title)
    table = document.add_table(rows=1, cols=len(words))
    for cell, (word, colour) in zip(table.rows[0].cells, words):
        run = cell.paragraphs[0].add_run(word)
        if colour is not None:
            run.font.color.rgb = RGBColor(*colour)
    document.save(path)
    return str(path)


def write_epub(path: Path, chapters: dict[str, str], *, book_id: str = "urn:uuid:1", title: str = "Pass Through",
               toc: bool = True) -> str:
    """A flat EPUB as Calibre writes one: ``toc.ncx``, ``content.opf`` and one HTML file a chapter."""
    nav = "".join(f'\n    <navPoint id="n{i}" playOrder="{i}"><navLabel><text>{name}</text></navLabel>'
                  f'<content src="{name}"/></navPoint>' for i, name in enumerate(chapters))
    opf = (f'<?xml version="1.0"?>\n<package xmlns="http://www.idpf.org/2007/opf">\n<metadata>\n'
           f'<dc:title>{title}</dc:title>\n<dc:identifier id="id">{book_id}</dc:identifier>\n</metadata>\n</package>\n')
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        if toc:
            archive.writestr("toc.ncx", f'<?xml version="1.0"?>\n<ncx>\n<navMap>{nav}\n</navMap>\n</ncx>\n')
        archive.writestr("content.opf", opf)
        for name, body in chapters.items():
            archive.writestr(name, f"<html>\r\n<head><title>{title}</title></head>\n<body>\n{body}\n</body></html>\n")
    return str(path)
