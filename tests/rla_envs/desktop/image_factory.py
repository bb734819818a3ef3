"""Pictures made in the image tests (ours and the differential ones against OSWorld's)."""

import numpy as np
from PIL import Image, ImageDraw


def picture(width=96, height=64):
    """Gradients, a disc and a bar: enough structure for SSIM to tell pictures apart."""
    x = np.linspace(0, 1, width)[None, :]
    y = np.linspace(0, 1, height)[:, None]
    pixels = np.stack([200 * x + 30 * y, 60 + 120 * y + 0 * x, 180 - 140 * x * y], axis=2)
    image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image)
    draw.ellipse((width // 5, height // 5, width // 2, height * 3 // 4), fill=(230, 200, 40))
    draw.rectangle((width * 3 // 5, height // 8, width * 4 // 5, height * 7 // 8), fill=(40, 60, 160))
    return image
