"""`python -m portalctl` and the `portalctl` console script."""

from .app import app


def main() -> None:
    app(prog_name="portalctl")


if __name__ == "__main__":
    main()
