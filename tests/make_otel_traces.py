"""Re-make the OpenTelemetry fixtures in tests/data/otel/ (needs the instrumentations; the suite does not).

    pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-common \
        opentelemetry-instrumentation-openai-v2 opentelemetry-instrumentation-anthropic \
        opentelemetry-instrumentation-openai openinference-instrumentation-openai \
        openinference-instrumentation-anthropic logfire
    python tests/make_otel_traces.py              # every scenario but LEGACY's
    python tests/make_otel_traces.py NAME ...     # only these

The google-genai scenarios need google-genai < 3 and opentelemetry-instrumentation-google-genai,
the legacy ones older packages (tests/data/otel/README.md says which): each group is made in a
virtual environment of its own. ``generate(name, folder)`` is what the frameworks suite runs live.

Each scenario runs in its own process (the instrumentations read their switches from the
environment when they start): the agent of ``otel_agent.py`` runs against the loopback server
under the real instrumentation, every span and log record goes to memory, and the lot is written
as OTLP JSON, the encoding the collector's file exporter writes (hex trace and span ids, int64
as strings, enums as numbers). Spans go on one line and log records on the next (JSON lines),
except ``*-document.json`` which is a single pretty-printed ExportTraceServiceRequest.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import sysconfig
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
OUT = HERE / "data" / "otel"
sys.path.insert(0, str(HERE))

# name: (agent, instrumentation, environment)
SCENARIOS: dict[str, tuple[str, str, dict[str, str]]] = {
    "anthropic-agent": ("anthropic", "traceloop", {}),
    "anthropic-agent-stream": ("anthropic-stream", "traceloop", {}),
    "anthropic-content-off": ("anthropic", "traceloop", {"TRACELOOP_TRACE_CONTENT": "false"}),
    # the tool result makes the server answer 529
    "anthropic-overloaded": ("anthropic-overloaded", "traceloop", {}),
    "openai-agent": (
        "openai",
        "openai-v2",
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
    ),
    "openai-agent-stream": (
        "openai-stream",
        "openai-v2",
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
    ),
    "openai-agent-events": (
        "openai",
        "openai-v2",
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "event_only"},
    ),
    "openai-content-off": ("openai", "openai-v2", {}),
    # needs opentelemetry-instrumentation-openai-v2 < 2.4 (its 1.30-style message events):
    # python tests/make_otel_traces.py openai-agent-legacy
    "openai-agent-legacy": (
        "openai",
        "openai-v2",
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
    ),
    # the anthropic SDK's own spans alone, content mode on
    "anthropic-sdk-only": ("anthropic", "none", {"ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE": "content"}),
    "google-agent": (
        "google",
        "google-genai",
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
    ),
    "google-agent-stream": (
        "google-stream",
        "google-genai",
        {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only"},
    ),
    "google-content-off": ("google", "google-genai", {}),
    "openinference-openai": ("openai", "openinference", {}),
    "openinference-openai-stream": ("openai-stream", "openinference", {}),
    "openinference-anthropic": ("anthropic", "openinference", {}),
    "openinference-anthropic-stream": ("anthropic-stream", "openinference", {}),
    "openinference-content-off": (
        "openai",
        "openinference",
        {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    ),
    "logfire-openai": ("openai", "logfire", {}),
    "logfire-openai-stream": ("openai-stream", "logfire", {}),
    "logfire-anthropic": ("anthropic", "logfire", {}),
    "logfire-anthropic-stream": ("anthropic-stream", "logfire", {}),
    "traceloop-openai": ("openai", "traceloop", {}),
    "traceloop-openai-stream": ("openai-stream", "traceloop", {}),
    # traceloop before it moved to gen_ai.input.messages (gen_ai.prompt.N.* attributes), in an
    # environment of its own: opentelemetry-instrumentation-anthropic/-openai 0.47.5
    "traceloop-legacy-anthropic": ("anthropic", "traceloop", {}),
    "traceloop-legacy-anthropic-stream": ("anthropic-stream", "traceloop", {}),
    "traceloop-legacy-openai": ("openai", "traceloop", {}),
    "traceloop-legacy-openai-stream": ("openai-stream", "traceloop", {}),
    "traceloop-legacy-content-off": ("openai", "traceloop", {"TRACELOOP_TRACE_CONTENT": "false"}),
}
# made in environments of their own (older packages): python tests/make_otel_traces.py NAME
LEGACY = (
    "openai-agent-legacy",
    *(n for n in SCENARIOS if n.startswith(("traceloop-legacy", "google-"))),
)
OVERLOADED = "__status_529__"
PACKAGES = {  # by instrumentation: the packages whose versions are noted beside each file
    "traceloop": ("opentelemetry-instrumentation-anthropic", "opentelemetry-instrumentation-openai"),
    "openai-v2": ("opentelemetry-instrumentation-openai-v2", "opentelemetry-util-genai"),
    "none": (),
    "google-genai": ("opentelemetry-instrumentation-google-genai", "opentelemetry-util-genai"),
    "openinference": (
        "openinference-instrumentation-openai",
        "openinference-instrumentation-anthropic",
        "openinference-instrumentation",
    ),
    "logfire": ("logfire",),
}
COMMON = ("opentelemetry-sdk", "anthropic", "openai", "google-genai")


def spans_document(spans: Any) -> dict[str, Any]:
    """Finished SDK spans as one OTLP JSON ExportTraceServiceRequest, as a collector's file exporter writes it."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document: dict[str, Any] = hex_ids(MessageToDict(encode_spans(spans), use_integers_for_enums=True))
    return document


def hex_ids(node: Any) -> Any:
    """OTLP JSON writes trace and span ids as hex, where protobuf's JSON mapping writes base64."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and v else hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hex_ids(v) for v in node]
    return node


def run(name: str, out: Path = OUT) -> None:
    """One scenario, in this process: the agent under its instrumentation, the export written to ``out``."""
    import otel_agent
    from google.protobuf.json_format import MessageToDict
    from llm_server import start_server
    from opentelemetry import trace
    from opentelemetry._logs import set_logger_provider
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    try:
        from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
    except ImportError:  # its name before opentelemetry-sdk 1.39 (the legacy environments)
        from opentelemetry.sdk._logs.export import InMemoryLogExporter as InMemoryLogRecordExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    agent, instrumentation, _ = SCENARIOS[name]
    resource = Resource.create({"service.name": "weather-agent"})
    spans = InMemorySpanExporter()
    if instrumentation == "logfire":
        import logfire

        # logfire owns the tracer provider; the in-memory exporter rides along, nothing is sent
        logfire.configure(
            send_to_logfire=False,
            console=False,
            service_name="weather-agent",
            additional_span_processors=[SimpleSpanProcessor(spans)],
        )
        tracer_provider: Any = trace.get_tracer_provider()
    else:
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(tracer_provider)
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    set_logger_provider(logger_provider)

    sdk = agent.split("-")[0]
    _instrument(instrumentation, sdk)
    server = start_server()
    try:
        tracer = trace.get_tracer("weather-agent")
        streamed = agent.endswith("stream")
        with tracer.start_as_current_span("handle /ask"):
            if sdk == "anthropic":
                import anthropic

                client = anthropic.Anthropic(api_key="sk-ant-placeholder", base_url=server.url, max_retries=0)
                try:
                    answer = otel_agent.anthropic_agent(
                        client,
                        streamed=streamed,
                        tool_result=OVERLOADED if agent.endswith("overloaded") else otel_agent.TOOL_RESULT,
                    )
                except anthropic.APIStatusError as exc:
                    answer = f"{type(exc).__name__} {exc.status_code}"
            elif sdk == "openai":
                import openai

                client = openai.OpenAI(api_key="sk-placeholder", base_url=server.url + "/v1", max_retries=0)
                answer = otel_agent.openai_agent(client, streamed=streamed)
            else:
                from google import genai
                from google.genai import types

                client = genai.Client(
                    api_key="placeholder", http_options=types.HttpOptions(base_url=server.url)
                )
                answer = otel_agent.google_agent(client, streamed=streamed)
    finally:
        server.stop()
    tracer_provider.force_flush()
    logger_provider.force_flush()
    documents = [spans_document(spans.get_finished_spans())]
    if logs.get_finished_logs():
        documents.append(
            hex_ids(MessageToDict(encode_logs(logs.get_finished_logs()), use_integers_for_enums=True))
        )
    text = "".join(json.dumps(d, sort_keys=True) + "\n" for d in documents)
    # exception stack traces name this machine's folders: keep the file names only
    for folder, short in ((sysconfig.get_paths()["purelib"], "site-packages"), (str(HERE.parent), "project")):
        text = text.replace(json.dumps(folder)[1:-1], short)
    (out / f"{name}.jsonl").write_text(text)
    record = out / "versions.json"
    versions = json.loads(record.read_text()) if record.exists() else {}
    versions[f"{name}.jsonl"] = {p: _version(p) for p in (*PACKAGES[instrumentation], *COMMON)}
    record.write_text(json.dumps(versions, indent=2, sort_keys=True) + "\n")
    print(
        f"{name}: {answer!r}, {len(spans.get_finished_spans())} spans, {len(logs.get_finished_logs())} logs"
    )


def _instrument(instrumentation: str, sdk: str) -> None:
    """Turn the instrumentation on for the SDK the agent uses (each package has its own entry point)."""
    if instrumentation == "traceloop":
        if sdk == "anthropic":
            from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

            AnthropicInstrumentor().instrument()
        else:
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().instrument()
    elif instrumentation == "openai-v2":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as OpenAIV2

        OpenAIV2().instrument()
    elif instrumentation == "google-genai":
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

        GoogleGenAiSdkInstrumentor().instrument()
    elif instrumentation == "openinference":
        if sdk == "anthropic":
            from openinference.instrumentation.anthropic import AnthropicInstrumentor as OIAnthropic

            OIAnthropic().instrument()
        else:
            from openinference.instrumentation.openai import OpenAIInstrumentor as OIOpenAI

            OIOpenAI().instrument()
    elif instrumentation == "logfire":
        import logfire

        if sdk == "anthropic":
            logfire.instrument_anthropic()
        else:
            logfire.instrument_openai()


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def generate(name: str, out: Path = OUT) -> Path:
    """Run one scenario in a process of its own (the instrumentations read their switches from the
    environment when they start, and patch the SDKs for good); returns the file it wrote."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OTEL_", "TRACELOOP_", "ANTHROPIC_", "OPENAI_", "OPENINFERENCE_", "LOGFIRE_"))
    }
    done = subprocess.run(
        [sys.executable, __file__, "--run", name, str(out)],
        env={**clean, **SCENARIOS[name][2]},
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"{name}: exit {done.returncode}\n{done.stderr}")
    return out / f"{name}.jsonl"


def main(names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names or [n for n in SCENARIOS if n not in LEGACY]:
        print(generate(name))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        run(sys.argv[2], Path(sys.argv[3]) if sys.argv[3:] else OUT)
    else:
        main(sys.argv[1:])
