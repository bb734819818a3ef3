"""Screenshots of the session's display with mss: raw RGB bytes and PNG."""

from __future__ import annotations

import io
import threading

__all__ = ["Screen"]


class Screen:
    """Grabs the X display (``$DISPLAY``) with mss; one mss connection per thread (mss is not thread-safe)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _mss(self):
        sct = getattr(self._local, "sct", None)
        if sct is None:
            import mss

            factory = getattr(mss, "MSS", None) or mss.mss  # mss 10 renamed mss.mss to mss.MSS
            sct = self._local.sct = factory()
        return sct

    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the screen."""
        monitor = self._mss().monitors[0]
        return monitor["width"], monitor["height"]

    def grab_rgb(self) -> tuple[bytes, int, int]:
        """The screen as packed RGB bytes (row-major, 3 bytes a pixel) and its width and height."""
        from PIL import Image

        shot = self._mss().grab(self._mss().monitors[0])
        width, height = shot.size
        pixels = bytes(shot.raw)
        image = Image.frombuffer("RGB", (width, height), pixels, "raw", "BGRX", 0, 1)
        return image.tobytes(), width, height

    def grab_png(self, cursor: tuple[int, int] | None = None) -> bytes:
        """The screen as PNG bytes; with ``cursor``, a small arrow is drawn where the pointer is."""
        from PIL import Image, ImageDraw

        data, width, height = self.grab_rgb()
        image = Image.frombytes("RGB", (width, height), data)
        if cursor is not None:
            x, y = cursor
            arrow = [(x, y), (x, y + 16), (x + 4, y + 12), (x + 7, y + 19), (x + 9, y + 18), (x + 6, y + 11),
                     (x + 11, y + 11)]
            ImageDraw.Draw(image).polygon(arrow, fill=(255, 255, 255), outline=(0, 0, 0))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", compress_level=1)
        return buffer.getvalue()
