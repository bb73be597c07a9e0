"""Image references for the catalog: the one definition lives in the kernel's `portal.kernel.imagerefs`,
which forges may read too (forges imports nothing from the catalog: it knows repositories,
not services or clusters)."""

from portal.kernel.imagerefs import DOCKER_HUB, ImageRef, normalise_name, parse_image, split_registry

__all__ = ["DOCKER_HUB", "ImageRef", "normalise_name", "parse_image", "split_registry"]
