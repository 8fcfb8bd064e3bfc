#!/usr/bin/env python3
"""Run mastodon-mock 0.6.1 with an optional status length limit of your choosing.

Usage: python mastodon_mock_serve.py [--max-characters N] serve --config mock.toml [...]

Everything after the wrapper's own flag goes to `mastodon_mock` unchanged.
mastodon-mock hard-codes its limit (500) as a module constant and has no config
key for it; this wrapper patches that constant before the app starts, so both
/api/v1/instance and /api/v2/instance (configuration.statuses.max_characters)
advertise N and POST /api/v1/statuses rejects text longer than N code points
with 422. Run it with the sandbox venv's python (MUSEBOT_PYTHON).
"""
import sys


def main(argv):
    max_chars = None
    rest = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--max-characters" and i + 1 < len(argv):
            max_chars = int(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--max-characters="):
            max_chars = int(arg.split("=", 1)[1])
            i += 1
            continue
        rest.append(arg)
        i += 1

    if max_chars is not None:
        if max_chars < 1:
            raise SystemExit("--max-characters must be >= 1")
        import mastodon_mock.routers.statuses as statuses
        import mastodon_mock.serializers.instance as instance

        instance.MAX_STATUS_CHARACTERS = max_chars
        instance._STATUS_CONFIG["max_characters"] = max_chars  # pylint: disable=protected-access
        statuses.MAX_STATUS_CHARACTERS = max_chars

    from mastodon_mock.cli import main as mock_main

    mock_main(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
