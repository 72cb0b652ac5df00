// toolscript's runtime for TypeScript (`toolscript exec --lang ts`), served by the gateway at
// <gateway>/runtime/tools.ts with its name map in the NAMES line below (toolscript/codemode/runtime.ts).
//
//   import { tools, ToolError } from "toolscript";
//
//   const sum = await tools.fixture.add({ a: 2, b: 3 });         // ONE object of arguments
//   const page = await tools.call("fetch__get", { url: "..." });  // any tool id, JSON argument names
//   for (const hit of await tools.search("github issues")) console.log(hit.id, hit.description);
//   const described = await tools.list("fixture");                // tool descriptions, of one server or all
//
// Every tool function takes one object whose keys are the tool's JSON argument names (as
// `toolscript get-types --lang ts` shows them; the Python keyword spellings are accepted too;
// undefined values are left out) and returns a Promise: await it.  It resolves to the tool's
// structuredContent when it has one, else its single text block decoded as JSON (or the text
// itself when it is not JSON), else its text blocks joined by "\n", else the content list;
// built-in tools (builtin__...) resolve to their data as is.  Results are typed `any`.
// A failed call rejects with ToolError: err.message is "server__tool: message"; err.tool,
// err.code, err.reason (the tool's own message) and err.data say more.  A configured server that is
// not ready (it failed, or is still connecting) throws a ToolError with code "server_unavailable"
// naming why, when tools.<server> is read.
//
// The gateway is where this module was loaded from: import.meta.url minus /runtime/tools.ts.

type ToolFn = (params?: Record<string, any>) => Promise<any>;

/** `tools.<server>.<tool>({...})`, `tools.call(id, {...})`, `tools.search(query)`, `tools.list(server?)`. */
export interface Tools {
  call(tool: string, args?: Record<string, any>): Promise<any>;
  search(query: string, limit?: number): Promise<any[]>;
  list(server?: string): Promise<any[]>;
  readonly [server: string]: any;
}

const SOURCE = "exec-ts";
const RUNTIME_METHODS: string[] = ["call", "search", "list"];
// {"servers": {attr: {fn: {"id": "server__tool", "args": {py_name: json_name}}}}, "unavailable": {attr: reason}}:
// the gateway replaces this one line with its map, as one JSON string literal (no name can change the code).
const NAMES: any = JSON.parse("{}");

const SUFFIX = "/runtime/tools.ts";
const GATEWAY: string = (() => {
  const url = new URL(import.meta.url);
  url.search = "";
  url.hash = "";
  const href = url.href;
  return (url.protocol === "http:" || url.protocol === "https:") && href.endsWith(SUFFIX) ? href.slice(0, -SUFFIX.length) : "";
})();
const NO_GATEWAY = "this module finds the toolscript gateway from the URL it was loaded from " +
  "(<gateway>/runtime/tools.ts, not " + import.meta.url + "); import it as \"toolscript\" inside `toolscript exec --lang ts`";

/** A tool call that failed: message "server__tool: message"; tool, code, reason, data. */
export class ToolError extends Error {
  tool: string;
  code: string;
  reason: string;
  data: any;
  constructor(tool: string, code: string, reason: string, data?: any) {
    super(`${tool}: ${reason}`);
    this.name = "ToolError";
    this.tool = tool;
    this.code = code;
    this.reason = reason;
    this.data = data;
  }
}

function isObject(value: any): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function httpError(status: number, payload: any, path: string): string {
  let message = isObject(payload) && typeof payload.error === "string" ? payload.error : "";
  if (status === 404 && !message) message = `the gateway has no ${path.split("?")[0]} endpoint`;
  return `gateway answered HTTP ${status}: ${message || "no details"}`;
}

async function request(method: string, path: string, body: any, tool: string): Promise<[number, any]> {
  if (!GATEWAY) throw new ToolError(tool, "no_gateway", NO_GATEWAY);
  let text: string;
  let status: number;
  try {
    const init: RequestInit = body === undefined
      ? { method }
      : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
    const response = await fetch(GATEWAY + path, init);
    status = response.status;
    text = await response.text();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ToolError(tool, "gateway_unreachable", `cannot reach the toolscript gateway at ${new URL(GATEWAY).host}: ${why}`);
  }
  let payload: any = null;
  try {
    payload = text ? JSON.parse(text) : null;
  } catch {
    payload = null;
  }
  return [status, payload];
}

async function getJson(path: string, tool: string): Promise<any> {
  const [status, payload] = await request("GET", path, undefined, tool);
  if (status !== 200 || !isObject(payload)) throw new ToolError(tool, "gateway_error", httpError(status, payload, path));
  return payload;
}

function resultValue(tool: string, data: any): any {
  if (tool.startsWith("builtin__") || !isObject(data) || !Array.isArray(data.content)) return data;
  if (data.structuredContent !== undefined && data.structuredContent !== null) return data.structuredContent;
  const content: any[] = data.content;
  if (content.length && content.every((c) => isObject(c) && c.type === "text" && typeof c.text === "string")) {
    if (content.length === 1) {
      try {
        return JSON.parse(content[0].text);
      } catch {
        return content[0].text;
      }
    }
    return content.map((c) => c.text).join("\n");
  }
  return content;
}

/** Call any tool by id ("server__tool") with its JSON argument names. */
async function call(tool: string, args: Record<string, any> = {}): Promise<any> {
  if (typeof tool !== "string" || !tool) throw new TypeError("the tool id must be a non-empty string such as \"server__tool\"");
  if (!isObject(args)) throw new TypeError(`arguments for ${tool} must be an object, not ${Array.isArray(args) ? "an array" : typeof args}`);
  const [status, payload] = await request("POST", "/call", { tool, arguments: args, source: SOURCE }, tool);
  if (status !== 200 || !isObject(payload) || !("ok" in payload)) throw new ToolError(tool, "gateway_error", httpError(status, payload, "/call"));
  if (!payload.ok) {
    const error = isObject(payload.error) ? payload.error : {};
    throw new ToolError(tool, error.code || "error", error.message || "the tool failed", payload.data);
  }
  return resultValue(tool, payload.data);
}

/** Tools matching `query`, best first: [{id, server, name, score, description}, ...]. */
async function search(query: string, limit = 10): Promise<any[]> {
  const path = `/search?q=${encodeURIComponent(String(query))}&limit=${Math.trunc(Number(limit)) || 10}`;
  return (await getJson(path, "tools.search")).results ?? [];
}

/** Tool descriptions (id, server, name, description, inputSchema, ...), of one server or all. */
async function list(server?: string): Promise<any[]> {
  const path = "/tools" + (server ? `?server=${encodeURIComponent(String(server))}` : "");
  return (await getJson(path, "tools.list")).tools ?? [];
}

function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}

function noSuch(kind: string, name: string, known: string[], where: string): string {
  const loose = (s: string) => s.toLowerCase().replace(/[_-]/g, "");
  const close = known.filter((k) => loose(k) === loose(name) || distance(k.toLowerCase(), name.toLowerCase()) <= Math.max(1, Math.floor(name.length / 4)));
  const hint = close.length ? `; did you mean ${close.slice(0, 3).join(", ")}?` : "";
  const sorted = [...known].sort();
  const listing = sorted.slice(0, 30).join(", ") || "none";
  const more = sorted.length > 30 ? ` (and ${sorted.length - 30} more)` : "";
  return `${where} has no ${kind} ${JSON.stringify(name)}${hint} (available: ${listing}${more}); ` +
    `tools.call("server__tool", {...}) reaches any tool id`;
}

// Properties asked for by await, JSON.stringify and inspection, which must not throw.
const PASS = new Set(["then", "toJSON", "inspect", "nodeType", "asymmetricMatch", "$$typeof"]);

function guarded<T extends object>(target: T, kind: string, where: string, unavailable: Record<string, any> = {}): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      if (typeof property === "symbol" || property in object || PASS.has(property)) return Reflect.get(object, property, receiver);
      if (Object.hasOwn(unavailable, property)) {
        const why = typeof unavailable[property] === "string" && unavailable[property] ? unavailable[property] : "no reason given";
        throw new ToolError(`${where}.${property}`, "server_unavailable", `the server ${JSON.stringify(property)} is configured but not available: ${why}`);
      }
      throw new TypeError(noSuch(kind, property, Object.keys(object), where));
    },
  });
}

function plainKey(key: string): string {
  return /^[A-Za-z_$][0-9A-Za-z_$]*$/.test(key) ? key : JSON.stringify(key);
}

function toolFunction(id: string, path: string, renames: Record<string, string>): ToolFn {
  return async function (...given: any[]): Promise<any> {
    const params = given[0] ?? {};
    if (given.length > 1 || !isObject(params)) {
      const example = Object.values(renames).map((k) => `${plainKey(k)}: ...`).join(", ") || "name: value";
      throw new TypeError(`${path}() takes one object of arguments: ${path}({ ${example} })`);
    }
    const entries: [string, any][] = [];
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined) entries.push([Object.hasOwn(renames, key) ? renames[key] : key, value]);
    }
    return call(id, Object.fromEntries(entries));
  };
}

function build(names: any): Tools {
  const servers = isObject(names) && isObject(names.servers) ? names.servers : {};
  const unavailable = isObject(names) && isObject(names.unavailable) ? names.unavailable : {};
  const root = {};
  for (const [serverAttr, entries] of Object.entries(servers)) {
    if (RUNTIME_METHODS.includes(serverAttr) || !isObject(entries)) continue;
    const server = {};
    for (const [attr, entry] of Object.entries(entries as Record<string, any>)) {
      if (!isObject(entry) || typeof entry.id !== "string") continue;
      const renames = isObject(entry.args) ? entry.args : {};
      const fn = toolFunction(entry.id, `tools.${serverAttr}.${attr}`, renames);
      Object.defineProperty(fn, "name", { value: attr });
      Object.defineProperty(server, attr, { value: fn, enumerable: true });
    }
    Object.defineProperty(root, serverAttr, { value: guarded(server, "tool", `tools.${serverAttr}`), enumerable: true });
  }
  for (const [name, method] of [["call", call], ["search", search], ["list", list]] as const) {
    Object.defineProperty(root, name, { value: method, enumerable: false });
  }
  return guarded(root, "server", "tools", unavailable) as unknown as Tools;
}

export const tools: Tools = build(NAMES);
export default tools;

