"""Small PDFs written byte by byte: pages of Helvetica text at given positions and embedded RGB images.

A page is a list of items: ``(x, y, text)`` or ``(x, y, text, size)`` draws text with its baseline at ``(x, y)``
(points from the bottom left of a 612 x 792 page); a Pillow image as ``("image", x, y, image)`` is drawn 100 pt wide.
"""

import zlib


def _escape(text):
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_pdf(path, pages):
    """Write ``pages`` (see the module docstring) as a PDF at ``path``; return the path as a string."""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>", 3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
    kids, number = [], 4
    for page in pages:
        content, xobjects = [], []
        for item in page:
            if item[0] == "image":
                _, x, y, image = item
                rgb = image.convert("RGB")
                objects[number] = (f"<< /Type /XObject /Subtype /Image /Width {rgb.width} /Height {rgb.height} "
                                   f"/ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode /Length "
                                   f"{{length}} >>").encode(), zlib.compress(rgb.tobytes())
                xobjects.append(f"/Im{number} {number} 0 R")
                content.append(f"q 100 0 0 100 {x} {y} cm /Im{number} Do Q")
                number += 1
            else:
                x, y, text, size = (*item, 12) if len(item) == 3 else item
                content.append(f"BT /F1 {size} Tf {x} {y} Td ({_escape(text)}) Tj ET")
        stream = "\n".join(content).encode("latin-1")
        objects[number] = b"<< /Length {length} >>", stream
        resources = f"<< /Font << /F1 3 0 R >> /XObject << {' '.join(xobjects)} >> >>"
        objects[number + 1] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources {resources} "
                               f"/Contents {number} 0 R >>").encode()
        kids.append(f"{number + 1} 0 R")
        number += 2
    objects[2] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>".encode()
    out, offsets = bytearray(b"%PDF-1.4\n"), {}
    for key in sorted(objects):
        offsets[key] = len(out)
        value = objects[key]
        if isinstance(value, tuple):
            head, stream = value
            out += f"{key} 0 obj\n".encode() + head.replace(b"{length}", str(len(stream)).encode())
            out += b"\nstream\n" + stream + b"\nendstream\nendobj\n"
        else:
            out += f"{key} 0 obj\n".encode() + value + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[key]:010d} 00000 n \n".encode() for key in sorted(objects))
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return str(path)
