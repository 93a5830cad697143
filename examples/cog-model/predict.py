"""A minimal Cog model for the enhance endpoint (/generate/enhance/vendor-a/standard-enhance).

It enlarges (or shrinks) an image to exactly width x height with Pillow's Lanczos filter,
covering the frame and cropping the overflow (crop_to_fill) or fitting inside it with padding
(white for JPEG, transparent otherwise), sharpens it, and writes it as PNG, JPEG or WebP: the
inputs and the output the endpoint's reference engine has, so that a route can map the
endpoint's fields to them one to one (examples/cog-model/routes.json, docs/providers.md).
"""

import tempfile

from cog import BasePredictor, Input, Path
from PIL import Image, ImageFilter, ImageOps

FORMATS = {"png": "PNG", "jpg": "JPEG", "webp": "WEBP"}


class Predictor(BasePredictor):
    def predict(
        self,
        image: Path = Input(description="The image: a URL the server can read (the service sends a presigned one) or a data: URI."),
        width: int = Input(description="Width of the output, in pixels.", ge=1, le=4096),
        height: int = Input(description="Height of the output, in pixels.", ge=1, le=4096),
        output_format: str = Input(description="The output's format.", choices=["png", "jpg", "webp"], default="jpg"),
        crop_to_fill: bool = Input(description="Cover the frame and crop the overflow, instead of fitting inside it.", default=False),
        sharpen: float = Input(description="How much to sharpen, 0 to 1.", ge=0.0, le=1.0, default=0.5),
    ) -> Path:
        with Image.open(image) as opened:
            src = ImageOps.exif_transpose(opened)
            jpeg = output_format == "jpg"
            src = src.convert("RGB" if jpeg else "RGBA")
        if crop_to_fill:
            out = ImageOps.fit(src, (width, height), Image.LANCZOS)
        else:
            out = ImageOps.pad(src, (width, height), Image.LANCZOS, color=(255, 255, 255) if jpeg else (0, 0, 0, 0))
        if sharpen > 0:
            out = out.filter(ImageFilter.UnsharpMask(radius=2, percent=int(200 * sharpen), threshold=2))
        path = Path(tempfile.mkdtemp()) / ("out." + output_format)
        out.save(path, FORMATS[output_format])
        return path
