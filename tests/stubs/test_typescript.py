"""TypeScript declarations (toolscript.stubs.typescript): structure, escaping, the same names as the Python stubs."""

from stub_checks import check_typescript, obj, tool
from toolscript.stubs.typescript import typescript_declarations


def test_typescript_structure():
    schema = obj(
        {
            "query": {"type": "string", "description": "what */ to find"},
            "per-page": {"type": "integer", "default": 30},
            "state": {"enum": ["open", "closed"]},
            "filter": {"$ref": "#/$defs/Filter"},
            "tags": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        },
        ["query"],
    )
    schema["$defs"] = {"Filter": obj({"owner": {"type": "string"}, "delete": {"type": "boolean"}}, ["owner"]), "Promise": {"enum": [1]}}
    schema["properties"]["p"] = {"$ref": "#/$defs/Promise"}
    entries = [
        tool("github", "search_issues", schema, "Search */ issues", outputSchema=obj({"total": {"type": "integer"}}, ["total"])),
        tool("github", "class", obj({})),
        tool("list", "x"),
    ]
    for ts in (typescript_declarations(entries), typescript_declarations(entries, full=True)):
        code = check_typescript(ts)
        assert "Search *\\/ issues" in ts and "what *\\/ to find" in ts
        assert "search_issues(params: {" in code and "class_(): Promise<any>;" in code and "list_: {" in code
        assert "query: string;" in code and '"per-page"?: number;' in ts and 'state?: "open" | "closed";' in ts
        assert "filter?: Filter;" in code and "tags?: Array<string | number>;" in code
        assert "export interface Filter {" in code and "owner: string;" in code and "delete?: boolean;" in code
        assert "Promise<SearchIssuesResult>" in code and "export interface SearchIssuesResult {" in code
        assert "export type GithubPromise = 1;" in code  # "Promise" is taken: the server's name goes first
        assert "@default 30" in ts
