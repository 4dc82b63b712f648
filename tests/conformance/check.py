#!/usr/bin/env python3
"""Validates toolwright's provider fixtures against the providers' official definitions.

Usage: check.py FIXTURE_DIR

The fixtures come from `cargo run -p toolwright-conformance --example write_fixtures -- DIR`:
every export, every formatted result and every provider response the parsers read. Each is
validated against the pydantic types of the official `openai`, `anthropic`, `google-genai` and
`mcp` packages (pinned in requirements.txt), strictly:

- JSON is validated in pydantic's strict mode (no coercion of "5" to 5);
- a key the official type does not define is a failure: the SDKs' request TypedDicts are made
  `extra="forbid"`, their response models' stored extras must be empty, and for models that
  ignore extras, every input key must survive a dump of the validated model;
- the SDKs' `Iterable[...]` request fields are read as lists, since pydantic validates an
  `Iterable` lazily and would accept a string where a list of blocks is required.

Each exported JSON Schema is also checked against the JSON Schema 2020-12 meta-schema (Gemini's
`parameters` are OpenAPI, not JSON Schema, and are checked against Gemini's `Schema` type and its
documented subset instead); OpenAI strict schemas against the strict-mode rules; and every MCP
`structuredContent` against the `outputSchema` its tool declares.

Exit status 1 on any failure; the last line reads "N passed, M failed".
"""

from __future__ import annotations

import collections.abc
import importlib
import json
import pkgutil
import sys
import typing
from pathlib import Path
from typing import Any, Callable

import jsonschema
import pydantic
from pydantic import ConfigDict, TypeAdapter
from typing_extensions import is_typeddict


def relist(tp: Any) -> Any:
    """The type with every `Iterable[X]` inside a Union read as `List[X]`."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is collections.abc.Iterable and args:
        return typing.List[relist(args[0])]  # type: ignore[misc]
    if origin is typing.Union:
        return typing.Union[tuple(relist(a) for a in args)]  # type: ignore[return-value]
    return tp


def harden(package_name: str) -> None:
    """Makes every request TypedDict of an SDK forbid unknown keys and read Iterable as List."""
    package = importlib.import_module(package_name)
    for info in pkgutil.walk_packages(package.__path__, package_name + "."):
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - optional extras of the SDK may be missing
            continue
        if getattr(module, "Iterable", None) is typing.Iterable:
            module.Iterable = typing.List  # type: ignore[attr-defined]
        for name, value in list(vars(module).items()):
            # Type aliases built at import time (`MessageContentParam = Union[str,
            # Iterable[...]]`) already hold the lazy Iterable, which takes a string as an
            # iterable of characters: rebuild them with List.
            if typing.get_origin(value) is typing.Union:
                setattr(module, name, relist(value))
            if isinstance(value, type) and is_typeddict(value) and value.__module__ == module.__name__:
                value.__pydantic_config__ = ConfigDict(extra="forbid", arbitrary_types_allowed=True)  # type: ignore[attr-defined]


harden("openai.types")
harden("anthropic.types")

import anthropic.types as anthropic_types  # noqa: E402
import mcp.types as mcp_types  # noqa: E402
import openai.types.chat as openai_chat  # noqa: E402
import openai.types.responses as openai_responses  # noqa: E402
from google.genai import types as gemini_types  # noqa: E402
from anthropic.types import message_create_params as anthropic_create  # noqa: E402
from openai.types.chat import completion_create_params as openai_chat_create  # noqa: E402
from openai.types.responses import response_create_params as openai_responses_create  # noqa: E402
from openai.types.responses import response_input_item, response_input_item_param  # noqa: E402


class Failure(Exception):
    pass


def model_extras(value: Any, path: str = "") -> list[str]:
    """Paths of keys a pydantic model accepted but does not define (stored as extras)."""
    found: list[str] = []
    if isinstance(value, pydantic.BaseModel):
        for key in (value.__pydantic_extra__ or {}):
            found.append(f"{path}/{key}")
        for name in type(value).model_fields:
            found.extend(model_extras(getattr(value, name, None), f"{path}/{name}"))
    elif isinstance(value, dict):
        for key, item in value.items():
            found.extend(model_extras(item, f"{path}/{key}"))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found.extend(model_extras(item, f"{path}/{i}"))
    return found


def lost_keys(given: Any, kept: Any, path: str = "") -> list[str]:
    """Paths of keys in the input that did not survive validation and dumping."""
    found: list[str] = []
    if isinstance(given, dict) and isinstance(kept, dict):
        for key, item in given.items():
            if key not in kept:
                found.append(f"{path}/{key}")
            else:
                found.extend(lost_keys(item, kept[key], f"{path}/{key}"))
    elif isinstance(given, list) and isinstance(kept, list) and len(given) == len(kept):
        for i, (a, b) in enumerate(zip(given, kept)):
            found.extend(lost_keys(a, b, f"{path}/{i}"))
    return found


_adapters: dict[Any, TypeAdapter] = {}


def validate(tp: Any, value: Any) -> None:
    """Strictly validates `value` against an official type; raises Failure naming the problem."""
    adapter = _adapters.get(tp)
    if adapter is None:
        adapter = _adapters[tp] = TypeAdapter(tp)
    try:
        validated = adapter.validate_json(json.dumps(value), strict=True)
    except pydantic.ValidationError as e:
        raise Failure(f"{type_name(tp)}: {e}") from None
    extras = model_extras(validated)
    if extras:
        raise Failure(f"{type_name(tp)}: keys it does not define: {extras}")
    dumped = adapter.dump_python(validated, mode="json", by_alias=True, exclude_unset=True)
    lost = lost_keys(value, dumped)
    if lost:
        raise Failure(f"{type_name(tp)}: keys it ignored: {lost}")


def type_name(tp: Any) -> str:
    return getattr(tp, "__qualname__", None) or str(tp)


def each(tp: Any) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not isinstance(value, list) or not value:
            raise Failure(f"expected a non-empty list of {type_name(tp)}")
        for i, item in enumerate(value):
            try:
                validate(tp, item)
            except Failure as e:
                raise Failure(f"[{i}] {e}") from None

    return check


def whole(tp: Any) -> Callable[[Any], None]:
    return lambda value: validate(tp, value)


def meta_schema(schema: Any, where: str) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        raise Failure(f"{where}: not a valid JSON Schema 2020-12: {e.message}") from None


def walk(schema: Any, path: str = ""):
    """Every subschema of a schema with its path."""
    if isinstance(schema, dict):
        yield path, schema
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from walk(sub, f"{path}/{key}/{name}")
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                yield from walk(value, f"{path}/{key}")
            elif key in ("anyOf", "prefixItems") and isinstance(value, list):
                for i, sub in enumerate(value):
                    yield from walk(sub, f"{path}/{key}/{i}")


OPENAI_STRICT_KEYWORDS = {
    "type", "description", "title", "properties", "required", "additionalProperties", "items",
    "anyOf", "enum", "$ref", "$defs", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}
OPENAI_STRICT_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


def openai_strict(schema: dict, where: str) -> None:
    """OpenAI's documented strict-mode rules, checked independently of the Rust rewriter."""
    if schema.get("type") != "object" or "anyOf" in schema:
        raise Failure(f"{where}: the root of a strict schema must be an object, not anyOf")
    for path, node in walk(schema):
        unknown = set(node) - OPENAI_STRICT_KEYWORDS
        if unknown:
            raise Failure(f"{where}{path}: keywords strict mode does not support: {sorted(unknown)}")
        if node.get("format") not in (None, *OPENAI_STRICT_FORMATS):
            raise Failure(f"{where}{path}: format {node['format']!r} is not supported")
        if "$ref" in node and len(node) > 1:
            raise Failure(f"{where}{path}: $ref with sibling keywords")
        types = node.get("type")
        types = types if isinstance(types, list) else [types]
        if "object" in types or "properties" in node:
            if node.get("additionalProperties") is not False:
                raise Failure(f"{where}{path}: object without additionalProperties: false")
            if sorted(node.get("required", [])) != sorted(node.get("properties", {})):
                raise Failure(f"{where}{path}: not every property is required")
        if "type" not in node and "anyOf" not in node and "$ref" not in node and "enum" not in node:
            raise Failure(f"{where}{path}: a schema without a type")


GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT"}


def gemini_openapi(schema: dict, where: str) -> None:
    """Gemini's OpenAPI subset as the issue states it: one upper-case type plus nullable,
    string-only enums, no $ref, const, oneOf or additionalProperties."""
    for path, node in walk(schema):
        for banned in ("$ref", "$defs", "const", "oneOf", "allOf", "additionalProperties", "prefixItems"):
            if banned in node:
                raise Failure(f"{where}{path}: `{banned}` is not in Gemini's Schema subset")
        if "type" in node and node["type"] not in GEMINI_TYPES:
            raise Failure(f"{where}{path}: type {node['type']!r} is not one of {sorted(GEMINI_TYPES)}")
        if "type" not in node and "anyOf" not in node:
            raise Failure(f"{where}{path}: a schema without a type")
        if any(not isinstance(v, str) for v in node.get("enum", [])):
            raise Failure(f"{where}{path}: an enum value that is not a string")


def gemini_request(body: Any) -> None:
    """A generateContent request body: the REST fields the agent sends, each its SDK type."""
    if not isinstance(body, dict):
        raise Failure("a generateContent request must be an object")
    unknown = set(body) - {"contents", "tools", "systemInstruction"}
    if unknown:
        raise Failure(f"keys a generateContent request does not define here: {sorted(unknown)}")
    if not body.get("contents"):
        raise Failure("a generateContent request without contents")
    each(gemini_types.Content)(body["contents"])
    if "tools" in body:
        each(gemini_types.Tool)(body["tools"])
    if "systemInstruction" in body:
        validate(gemini_types.Content, body["systemInstruction"])


def deferred_marked(tools: list) -> None:
    """The native-search fixtures defer exactly `create_order` and `supplier_stock`."""
    marked = sorted(t["name"] for t in tools if t.get("defer_loading") is True)
    if marked != ["create_order", "supplier_stock"]:
        raise Failure(f"defer_loading on {marked}, expected create_order and supplier_stock")


# What each fixture kind is, in the official definitions. Every check must pass.
CHECKS: dict[str, list[Callable[[Any], None]]] = {
    # Exports.
    "openai.chat.tools": [
        each(openai_chat.ChatCompletionFunctionToolParam),
        each(openai_chat.ChatCompletionFunctionTool),
    ],
    "openai.responses.tools": [
        each(openai_responses.FunctionToolParam),
        each(openai_responses.FunctionTool),
    ],
    "anthropic.tools": [each(anthropic_types.ToolParam), each(anthropic_types.ToolUnionParam)],
    # Deferred tools with the provider's own search: function tools with `defer_loading`, and
    # the search tool last, each a member of the request's `tools` union.
    "anthropic.tools_native_search": [
        lambda v: each(anthropic_types.ToolParam)(v[:-1]),
        lambda v: validate(anthropic_types.ToolSearchToolBm25_20251119Param, v[-1]),
        each(anthropic_types.ToolUnionParam),
        lambda v: deferred_marked(v[:-1]),
    ],
    "openai.responses.tools_native_search": [
        lambda v: each(openai_responses.FunctionToolParam)(v[:-1]),
        lambda v: validate(openai_responses.ToolSearchToolParam, v[-1]),
        each(openai_responses.ToolParam),
        lambda v: deferred_marked(v[:-1]),
    ],
    "gemini.tools": [each(gemini_types.Tool)],
    "mcp.tools": [each(mcp_types.Tool), lambda v: validate(mcp_types.ListToolsResult, {"tools": v})],
    # Formatted results.
    "openai.chat.tool_message": [
        whole(openai_chat.ChatCompletionToolMessageParam),
        whole(openai_chat.ChatCompletionMessageParam),
    ],
    "openai.responses.function_call_output": [
        whole(response_input_item_param.FunctionCallOutput),
        whole(response_input_item.FunctionCallOutput),
        whole(openai_responses.ResponseInputItemParam),
    ],
    "anthropic.tool_result": [whole(anthropic_types.ToolResultBlockParam)],
    "anthropic.user_message": [whole(anthropic_types.MessageParam)],
    "gemini.function_response": [whole(gemini_types.Part)],
    "gemini.content": [whole(gemini_types.Content)],
    "mcp.call_tool_result": [whole(mcp_types.CallToolResult)],
    # Provider responses the parsers read.
    "openai.chat.completion": [whole(openai_chat.ChatCompletion)],
    "openai.responses.output": [each(openai_responses.ResponseOutputItem)],
    "anthropic.message": [whole(anthropic_types.Message)],
    "gemini.response": [whole(gemini_types.GenerateContentResponse)],
    # Requests the agent's model clients send.
    "openai.chat.request": [whole(openai_chat_create.CompletionCreateParams)],
    "openai.responses.request": [whole(openai_responses_create.ResponseCreateParams)],
    "anthropic.request": [whole(anthropic_create.MessageCreateParams)],
    "gemini.request": [gemini_request],
    "mcp.call_tool_request": [
        whole(mcp_types.JSONRPCRequest),
        lambda v: validate(mcp_types.CallToolRequest, {"method": v["method"], "params": v["params"]}),
    ],
}


def schema_checks(fixture: dict) -> list[tuple[str, Callable[[], None]]]:
    """The schema-level checks of an export fixture."""
    kind, name, tools = fixture["kind"], fixture["name"], fixture["value"]
    checks: list[tuple[str, Callable[[], None]]] = []

    def add(label: str, fn: Callable[[], None]) -> None:
        checks.append((f"{kind}__{name} {label}", fn))

    strict = name.endswith("_strict")
    if kind == "openai.chat.tools":
        for t in tools:
            s, where = t["function"]["parameters"], t["function"]["name"]
            add(f"{where} meta-schema", lambda s=s, w=where: meta_schema(s, w))
            if t["function"]["strict"]:
                add(f"{where} strict rules", lambda s=s, w=where: openai_strict(s, w))
    elif kind == "openai.responses.tools":
        for t in tools:
            s, where = t["parameters"], t["name"]
            add(f"{where} meta-schema", lambda s=s, w=where: meta_schema(s, w))
            if t["strict"]:
                add(f"{where} strict rules", lambda s=s, w=where: openai_strict(s, w))
    elif kind == "anthropic.tools":
        for t in tools:
            s, where = t["input_schema"], t["name"]
            add(f"{where} meta-schema", lambda s=s, w=where: meta_schema(s, w))
            if strict and not t.get("strict"):
                add(f"{where} strict flag", lambda w=where: (_ for _ in ()).throw(Failure(f"{w}: strict missing")))
    elif kind == "gemini.tools":
        for declaration in tools[0]["functionDeclarations"]:
            where = declaration["name"]
            if "parametersJsonSchema" in declaration:
                s = declaration["parametersJsonSchema"]
                add(f"{where} meta-schema", lambda s=s, w=where: meta_schema(s, w))
            else:
                s = declaration["parameters"]
                add(f"{where} OpenAPI subset", lambda s=s, w=where: gemini_openapi(s, w))
                add(f"{where} Schema type", lambda s=s: validate(gemini_types.Schema, s))
    elif kind == "mcp.tools":
        for t in tools:
            where = t["name"]
            for field in ("inputSchema", "outputSchema"):
                s = t[field]
                add(f"{where} {field} meta-schema", lambda s=s, w=f"{where}.{field}": meta_schema(s, w))

                def object_root(s=s, w=f"{where}.{field}") -> None:
                    if s.get("type") != "object":
                        raise Failure(f"{w}: MCP requires an object at the root")

                add(f"{where} {field} object root", object_root)
    return checks


def check_fixture(fixture: dict, output_schemas: dict[str, dict]) -> list[tuple[str, Callable[[], None]]]:
    """Every check of one fixture, labelled."""
    label = f"{fixture['kind']}__{fixture['name']}"
    checks = CHECKS.get(fixture["kind"])
    if checks is None:
        return [(label, lambda k=fixture["kind"]: (_ for _ in ()).throw(Failure(f"unknown kind {k}")))]
    out: list[tuple[str, Callable[[], None]]] = [
        (f"{label} [{i}]", lambda c=check, v=fixture["value"]: c(v)) for i, check in enumerate(checks)
    ]
    try:
        out.extend(schema_checks(fixture))
    except (KeyError, TypeError, IndexError, AttributeError) as e:
        out.append((f"{label} shape", lambda e=e: (_ for _ in ()).throw(Failure(f"unexpected shape: {e!r}"))))
    if fixture["kind"] == "mcp.call_tool_result" and fixture["tool"] in output_schemas:
        schema, structured = output_schemas[fixture["tool"]], fixture["value"]["structuredContent"]

        def matches(schema=schema, structured=structured) -> None:
            errors = list(jsonschema.Draft202012Validator(schema).iter_errors(structured))
            if errors:
                raise Failure(f"structuredContent does not match outputSchema: {errors[0].message}")

        out.append((f"{label} structuredContent vs outputSchema", matches))
    return out


def first(fixtures: list[dict], kind: str, name: str | None = None) -> dict:
    return next(f for f in fixtures if f["kind"] == kind and (name is None or f["name"] == name))


# Known-bad variants of good fixtures: the checker must reject every one, or it proves nothing.
MUTATIONS: list[tuple[str, str, str | None, Callable[[Any], None]]] = [
    ("unknown key in an OpenAI tool", "openai.chat.tools", "openai_strict", lambda v: v[0]["function"].update(bogus=1)),
    ("strict flag as a string", "openai.chat.tools", "openai_strict", lambda v: v[0]["function"].update(strict="true")),
    ("optional property under strict", "openai.chat.tools", "openai_strict", lambda v: v[0]["function"]["parameters"]["required"].pop()),
    ("open object under strict", "openai.responses.tools", "responses_strict", lambda v: v[0]["parameters"].update(additionalProperties=True)),
    ("minLength under strict", "openai.responses.tools", "responses_strict", lambda v: next(iter(v[0]["parameters"]["properties"].values())).update(minLength=1)),
    ("input_schema missing", "anthropic.tools", "anthropic", lambda v: v[0].pop("input_schema")),
    ("input_examples as a list of strings", "anthropic.tools", "anthropic", lambda v: next((t for t in v if "input_examples" in t), v[0]).update(input_examples=["usb-c cable"])),
    ("input_examples under another name", "anthropic.tools", "anthropic", lambda v: (t := next((t for t in v if "input_examples" in t), v[0])).update(examples=t.pop("input_examples", []))),
    ("unknown key in a Gemini declaration", "gemini.tools", "gemini", lambda v: v[0]["functionDeclarations"][0].update(strict=True)),
    ("lower-case Gemini type", "gemini.tools", "gemini", lambda v: v[0]["functionDeclarations"][0]["parameters"].update(type="object")),
    ("$ref in Gemini parameters", "gemini.tools", "gemini", lambda v: v[0]["functionDeclarations"][0]["parameters"]["properties"].update(x={"$ref": "#/$defs/X"})),
    ("invalid JSON Schema", "gemini.tools", "gemini_json", lambda v: v[0]["functionDeclarations"][0]["parametersJsonSchema"].update(type=5)),
    ("unknown key in an MCP tool", "mcp.tools", "mcp", lambda v: v[0].update(inputschema={})),
    ("MCP annotation of the wrong type", "mcp.tools", "mcp", lambda v: v[0]["annotations"].update(readOnlyHint="yes")),
    ("non-object MCP outputSchema", "mcp.tools", "mcp", lambda v: v[0].update(outputSchema={"type": "array"})),
    ("tool message without its call id", "openai.chat.tool_message", None, lambda v: v.pop("tool_call_id")),
    ("tool message content as an object", "openai.chat.tool_message", None, lambda v: v.update(content={"a": 1})),
    ("function_call_output with output as a number", "openai.responses.function_call_output", None, lambda v: v.update(output=5)),
    ("is_error as a string", "anthropic.tool_result", None, lambda v: v.update(is_error="true")),
    ("unknown key in a tool_result", "anthropic.tool_result", None, lambda v: v.update(error_type="x")),
    ("functionResponse with `output` outside `response`", "gemini.function_response", None, lambda v: v["functionResponse"].update(output={})),
    ("isError as a string", "mcp.call_tool_result", None, lambda v: v.update(isError="false")),
    ("structuredContent off the declared schema", "mcp.call_tool_result", None, lambda v: v["structuredContent"].update(status="fine")),
    ("Anthropic image block of a media type the API refuses", "anthropic.tool_result", "00_sales_chart", lambda v: v["content"][1]["source"].update(media_type="image/tiff")),
    ("Anthropic image block without its source", "anthropic.tool_result", "00_sales_chart", lambda v: v["content"][1].pop("source")),
    ("Responses content part of an unknown type", "openai.responses.function_call_output", "00_sales_chart", lambda v: v["output"][1].update(type="output_image")),
    ("Gemini function-response part with an unknown key", "gemini.function_response", "00_sales_chart", lambda v: v["functionResponse"]["parts"][0].update(inline_blob={})),
    ("MCP image block without mimeType", "mcp.call_tool_result", "00_sales_chart", lambda v: v["content"][1].pop("mimeType")),
    ("MCP resource_link without uri", "mcp.call_tool_result", "00_sales_chart", lambda v: v["content"][3].pop("uri")),
    ("MCP embedded resource without uri", "mcp.call_tool_result", "00_sales_chart", lambda v: v["content"][4]["resource"].pop("uri")),
    ("content block in structuredContent off the output schema", "mcp.call_tool_result", "00_sales_chart", lambda v: v["structuredContent"]["data"]["content"][1].update(type="picture")),
    ("tool call arguments as an object", "openai.chat.completion", None, lambda v: v["choices"][0]["message"]["tool_calls"][0]["function"].update(arguments={})),
    ("tool_use without input", "anthropic.message", None, lambda v: v["content"][1].pop("input")),
    ("functionCall args as a list", "gemini.response", None, lambda v: v["candidates"][0]["content"]["parts"][0]["functionCall"].update(args=[])),
    ("tools/call without a name", "mcp.call_tool_request", None, lambda v: v["params"].pop("name")),
    ("agent tool message without its call id", "openai.chat.request", "openai", lambda v: next(m for m in v["messages"] if m["role"] == "tool").pop("tool_call_id")),
    ("agent assistant tool call arguments as an object", "openai.chat.request", "openai", lambda v: next(m for m in v["messages"] if m.get("tool_calls"))["tool_calls"][0]["function"].update(arguments={})),
    ("agent function_call_output with output as a number", "openai.responses.request", None, lambda v: next(i for i in v["input"] if i.get("type") == "function_call_output").update(output=5)),
    ("agent Anthropic request without max_tokens", "anthropic.request", None, lambda v: v.pop("max_tokens")),
    ("agent tool_result with is_error as a string", "anthropic.request", None, lambda v: v["messages"][2]["content"][0].update(is_error="false")),
    ("agent Gemini request with an unknown key", "gemini.request", None, lambda v: v.update(system="x")),
    ("agent Gemini functionResponse with a list as response", "gemini.request", None, lambda v: v["contents"][2]["parts"][0]["functionResponse"].update(response=[])),
    ("defer_loading as a string", "anthropic.tools_native_search", None, lambda v: v[0].update(defer_loading="true")),
    ("Anthropic search tool under another name", "anthropic.tools_native_search", None, lambda v: v[-1].update(name="search_tools")),
    ("a deferred tool not marked", "anthropic.tools_native_search", None, lambda v: next(t for t in v if t.get("defer_loading")).pop("defer_loading")),
    ("Responses tool search of an unknown type", "openai.responses.tools_native_search", None, lambda v: v[-1].update(type="tool_searcher")),
    ("Responses defer_loading as a number", "openai.responses.tools_native_search", None, lambda v: next(t for t in v if t.get("defer_loading")).update(defer_loading=1)),
]


def self_test(fixtures: list[dict], output_schemas: dict[str, dict]) -> list[str]:
    """Applies each mutation to a copy of a good fixture; returns the ones nothing rejected."""
    undetected = []
    for description, kind, name, mutate in MUTATIONS:
        fixture = json.loads(json.dumps(first(fixtures, kind, name)))
        mutate(fixture["value"])
        rejected = False
        for _, fn in check_fixture(fixture, output_schemas):
            try:
                fn()
            except Exception:  # noqa: BLE001 - any rejection counts
                rejected = True
                break
        if not rejected:
            undetected.append(description)
    return undetected


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    directory = Path(sys.argv[1])
    fixtures = [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]
    passed, failed = 0, 0

    def run(label: str, fn: Callable[[], None]) -> None:
        nonlocal passed, failed
        try:
            fn()
            passed += 1
        except Failure as e:
            failed += 1
            print(f"FAIL {label}: {e}")
        except Exception as e:  # noqa: BLE001 - a checker crash is a failure too, with its cause
            failed += 1
            print(f"FAIL {label}: {type(e).__name__}: {e}")

    # A tool with example arguments, so `input_examples` is checked against `ToolParam`.
    with_examples = [t["name"] for f in fixtures if f["kind"] == "anthropic.tools" for t in f["value"] if t.get("input_examples")]
    run("an Anthropic export carries input_examples", lambda: None if with_examples else (_ for _ in ()).throw(Failure("no Anthropic tool has input_examples")))

    kinds_seen = {f["kind"] for f in fixtures}
    missing = sorted(set(CHECKS) - kinds_seen)
    run("every kind has fixtures", lambda: (_ for _ in ()).throw(Failure(f"no fixtures of {missing}")) if missing else None)

    output_schemas: dict[str, dict] = {}
    for fixture in fixtures:
        if fixture["kind"] == "mcp.tools":
            for t in fixture["value"]:
                output_schemas[t["name"]] = t["outputSchema"]

    for fixture in fixtures:
        for label, fn in check_fixture(fixture, output_schemas):
            run(label, fn)

    if not missing:
        undetected = self_test(fixtures, output_schemas)
        for description in undetected:
            print(f"FAIL self-test: the checker accepted a known-bad fixture: {description}")
        failed += len(undetected)
        passed += len(MUTATIONS) - len(undetected)

    if len(fixtures) < 50:
        failed += 1
        print(f"FAIL only {len(fixtures)} fixtures in {directory}; expected the full set")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
