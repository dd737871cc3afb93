"""What to tell a person whose model is not (fully) configured.

Kept as text here so the CLI, the TUI's empty conversation pane and the error
path all say exactly the same thing.
"""

from __future__ import annotations


def model_not_configured_message() -> str:
    """Multi-line instructions for configuring a model, with working examples."""
    from astro_tui.config import config_path

    return f"""\
No model is configured, so astro cannot answer questions yet (everything else works).

Any OpenAI-compatible server will do. Pick one:

  OpenAI:
    export OPENAI_API_KEY=sk-...
    export ASTRO_MODEL=gpt-4.1-mini
    astro

  Ollama (local, no key needed):
    ollama pull qwen2.5-coder:7b
    OPENAI_BASE_URL=http://localhost:11434/v1 ASTRO_MODEL=qwen2.5-coder:7b astro

  vLLM, llama.cpp, LM Studio: set OPENAI_BASE_URL to the server's /v1 address
  and ASTRO_MODEL to the model name it serves.

Or put it in the config file {config_path()}:

    model = "qwen2.5-coder:7b"
    base_url = "http://localhost:11434/v1"
    # api_key = "sk-..."   (only for servers that need one)

Or pass flags: astro --model qwen2.5-coder:7b --base-url http://localhost:11434/v1
"""


def missing_key_message() -> str:
    """One line for a remote server configured without a key."""
    from astro_tui.config import config_path

    return (
        "no API key for the model server: set OPENAI_API_KEY (or api_key in "
        f"{config_path()}), or point --base-url / OPENAI_BASE_URL at a local server"
    )
