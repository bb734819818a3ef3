"""Workbooks with pivot tables, written with openpyxl's pivot classes (it has no API that builds one from data)."""

import openpyxl
from openpyxl.pivot.cache import CacheDefinition, CacheField, CacheSource, SharedItems, WorksheetSource
from openpyxl.pivot.table import DataField, FieldItem, Location, PageField, PivotField, RowColField, TableDefinition

SALES = [["Region", "Product", "Sales", "Note"], ["N", "a", 1, ""], ["S", "b", 2, ""], ["N", "b", 3, ""]]


def pivot_book(path, *, rows=(0,), cols=(), pages=(), data=((2, "sum"),), source="A1:C4", hidden=(),
               unused_leading=0, data_name="Sum - Sales", sheet="Sheet2"):
    """Save a book: the data on Sheet1 and one pivot table on ``sheet`` (None: no pivot table at all).

    ``rows``/``cols``/``pages`` are field indices; ``data`` lists ``(field, subtotal)``; ``hidden`` the row-field
    items marked hidden; ``unused_leading`` empty pivot fields in front (the source widened to the left by as many).
    """
    book = openpyxl.Workbook()
    data_sheet = book.active
    data_sheet.title = "Sheet1"
    for row in SALES:
        data_sheet.append(row)
    target = book.create_sheet(sheet or "Sheet2")
    if sheet is None:
        book.save(path)
        return str(path)
    fields = [PivotField() for _ in range(unused_leading)]
    for index in range(3):
        axis = "axisRow" if index in rows else "axisCol" if index in cols else "axisPage" if index in pages else None
        items = ([FieldItem(x=0, h=True if 0 in hidden else None), FieldItem(x=1, h=True if 1 in hidden else None),
                  FieldItem(t="default")] if axis else [])
        fields.append(PivotField(axis=axis, items=items, dataField=any(f == index for f, _ in data) or None))
    cache = CacheDefinition(
        cacheSource=CacheSource(type="worksheet", worksheetSource=WorksheetSource(ref=source, sheet="Sheet1")),
        cacheFields=[CacheField(name=name, sharedItems=SharedItems()) for name in SALES[0][:len(fields)]])
    pivot = TableDefinition(
        name="PivotTable1", cacheId=1, dataCaption="Values",
        location=Location(ref="A3:B6", firstHeaderRow=1, firstDataRow=1, firstDataCol=1),
        pivotFields=fields,
        rowFields=[RowColField(x=i + unused_leading) for i in rows],
        colFields=[RowColField(x=i + unused_leading) for i in cols],
        pageFields=[PageField(fld=i + unused_leading) for i in pages],
        dataFields=[DataField(fld=f + unused_leading, name=data_name, subtotal=s) for f, s in data])
    pivot.cache = cache
    target._pivots.append(pivot)
    book.save(path)
    return str(path)
