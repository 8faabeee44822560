"""Gantry as a Harbor installed agent: ``--agent gantry_harbor:Gantry``."""

from gantry_harbor.agent import Gantry, GantryOptions

__all__ = ["Gantry", "GantryOptions"]
