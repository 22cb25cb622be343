"""What a declaration of portal/config_vars.py is: a variable, and a section of them."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Var:
    name: str
    # As the environment writes it (and .env.example does); empty where the default is empty or
    # depends on other settings, which `shown` then says.
    default: str
    meaning: str  # Markdown, for the reference page; .env.example gets it as plain text
    shown: str = ""  # the reference's default cell, when it is not the plain `default`
    example: str | None = None  # .env.example's value, when it is not `default`

    @property
    def default_cell(self) -> str:
        return self.shown or (f"`{self.default}`" if self.default else "empty")


@dataclass(frozen=True)
class Section:
    title: str
    note: str  # Markdown after the title, or ""
    variables: tuple[Var, ...]
