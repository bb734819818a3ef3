"""The desktop's background: a gradient in Ubuntu's colours on the root window, instead of X's plain black.

OSWorld's Ubuntu VM shows a wallpaper where no window covers the screen; an agent's first frame of a task that opens
no window should look like a desktop too, not like a screen that failed. The picture is a pixmap of the controller's
own X connection (a core process: a reset's sweep of X clients keeps it), painted once at boot and put back on the
root window by every reset (:class:`~controller.xserver.XServerState`).
"""

from __future__ import annotations

__all__ = ["Wallpaper", "gradient_bands"]

TOP = (0x2C, 0x00, 0x1E)      # Ubuntu's aubergine
BOTTOM = (0x77, 0x21, 0x6F)   # light aubergine
BANDS = 64


def gradient_bands(height: int, top: tuple[int, int, int] = TOP, bottom: tuple[int, int, int] = BOTTOM,
                   bands: int = BANDS) -> list[tuple[int, int, int]]:
    """``(y, band height, 0xRRGGBB)`` of each horizontal band, top to bottom, covering ``height`` rows.

    >>> gradient_bands(4, (0, 0, 0), (255, 255, 255), bands=2)
    [(0, 2, 0), (2, 2, 16777215)]
    """
    bands = max(1, min(bands, height))
    rows = []
    for index in range(bands):
        y, end = index * height // bands, (index + 1) * height // bands
        share = index / (bands - 1) if bands > 1 else 0.0
        red, green, blue = (round(a + (b - a) * share) for a, b in zip(top, bottom))
        rows.append((y, end - y, (red << 16) | (green << 8) | blue))
    return rows


class Wallpaper:
    """A gradient pixmap on a connection this object keeps open; ``pixmap_id`` is what the root's background names."""

    def __init__(self, display: str | None = None):
        from Xlib.display import Display

        self._connection = Display(display)
        screen = self._connection.screen()
        root = screen.root
        geometry = root.get_geometry()
        self.pixmap = root.create_pixmap(geometry.width, geometry.height, screen.root_depth)
        gc = self.pixmap.create_gc()
        for y, rows, colour in gradient_bands(geometry.height):
            gc.change(foreground=colour)  # the default TrueColor visual: a pixel is its 0xRRGGBB
            self.pixmap.fill_rectangle(gc, 0, y, geometry.width, rows)
        gc.free()
        self._connection.sync()

    @property
    def pixmap_id(self) -> int:
        return self.pixmap.id

    def paint(self) -> None:
        """Show the wallpaper on the root window now."""
        root = self._connection.screen().root
        root.change_attributes(background_pixmap=self.pixmap)
        root.clear_area()
        self._connection.sync()

    def close(self) -> None:
        self._connection.close()
