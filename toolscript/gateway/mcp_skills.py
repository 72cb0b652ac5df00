"""Skills that MCP servers offer through the Skills extension (``io.modelcontextprotocol/skills``).

A server that declares the extension in its capabilities (``extensions``) answers
``skills/list`` (paginated with ``cursor`` / ``nextCursor``, with a ``ttlMs``
freshness hint) with one entry per skill: the ``uri`` of its ``SKILL.md``
(``skill://<path>/SKILL.md`` by convention, any scheme allowed), its
``frontmatter`` (``name`` and ``description`` always there) and its
``resources`` (a complete list of its files with digests, or ``"dynamic"``).

The gateway lists them when a server connects (``Upstream``) and serves them
with their server at ``GET /skills``; the suggestion hook and ``toolscript
skills`` read them there.  Only the entries are read: no skill file is fetched
ahead of need, as the extension asks.  ``GET /skills/read`` fetches one listed
skill's ``SKILL.md`` (``resources/read``) and checks it against the listing's
digest and size (a ``"dynamic"`` skill has none: it is marked unverified); the
caller compares its frontmatter with the listing (``claude_code.skills``).  An entry the extension calls invalid
(no ``resources``, or one of another type; a ``uri`` whose last path segment
is not the skill's ``name``) is left out and logged, and so is everything past
``MAX_PAGES`` pages or ``MAX_SKILLS`` skills.  A name is a label, not an
identity: the identity of a skill is its server and its ``uri``.
"""

import time
from typing import Any, Dict, List, Optional

from toolscript import log

logger = log.get("gateway.skills")

EXTENSION = "io.modelcontextprotocol/skills"
MAX_PAGES = 20
MAX_SKILLS = 1000
MAX_DESCRIPTION = 1024  # characters kept (the Agent Skills format's limit for the field)


def advertised(capabilities: Any) -> bool:
    """Whether a server's capabilities declare the Skills extension."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION), dict)


def list_skills(request: Any, server: str, timeout: float) -> Dict[str, Any]:
    """``{"skills": [{"uri", "name", "description", "dynamic"}], "ttlMs", "listedAt"}`` from ``skills/list``.

    ``request(method, params, timeout=...)`` sends one request (``ClientSession.request``);
    its errors propagate.
    """
    skills: List[Dict[str, Any]] = []
    cursor: Optional[str] = None
    seen = set()
    ttl: Optional[int] = None
    for _ in range(MAX_PAGES):
        result = request("skills/list", {"cursor": cursor} if cursor else {}, timeout=timeout)
        if not isinstance(result, dict) or not isinstance(result.get("skills"), list):
            raise ValueError("the server answered skills/list without a list of skills")
        if isinstance(result.get("ttlMs"), int) and not isinstance(result.get("ttlMs"), bool) and ttl is None:
            ttl = result["ttlMs"]
        for entry in result["skills"]:
            skill = _entry(entry, server)
            if skill is not None and len(skills) < MAX_SKILLS:
                skills.append(skill)
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor or cursor in seen:
            break
        seen.add(cursor)
    else:
        logger.warning("%s: skills/list kept paginating past %d pages; the rest is left out", server, MAX_PAGES)
    return {"skills": skills, "ttlMs": ttl, "listedAt": time.time()}


def _entry(entry: Any, server: str) -> Optional[Dict[str, Any]]:
    """One valid entry as the gateway keeps it, or None (logged)."""
    if not isinstance(entry, dict):
        return None
    uri, frontmatter, resources = entry.get("uri"), entry.get("frontmatter"), entry.get("resources")
    name = frontmatter.get("name") if isinstance(frontmatter, dict) else None
    description = frontmatter.get("description") if isinstance(frontmatter, dict) else None
    if not (isinstance(uri, str) and isinstance(name, str) and name and isinstance(description, str)):
        logger.info("%s: a skills/list entry without a uri, name or description is left out", server)
        return None
    if not (isinstance(resources, list) or resources == "dynamic"):
        logger.info("%s: skill %r has no valid resources (a list or \"dynamic\"); left out", server, name[:80])
        return None
    path = uri[:-len("/SKILL.md")] if uri.endswith("/SKILL.md") else ""
    if path.rstrip("/").rsplit("/", 1)[-1] != name:
        logger.info("%s: skill %r: its uri %r does not end in <name>/SKILL.md; left out", server, name[:80], uri[:200])
        return None
    kept = {"uri": uri, "name": name, "description": " ".join(description.split())[:MAX_DESCRIPTION],
            "dynamic": resources == "dynamic"}
    if isinstance(resources, list):
        own = [r for r in resources if isinstance(r, dict) and r.get("uri") == uri]
        digest, size = (own[0].get("digest"), own[0].get("size")) if own else (None, None)
        if not (isinstance(digest, str) and digest.startswith("sha256:") and isinstance(size, int)):
            logger.info("%s: skill %r: its resources do not list its SKILL.md with a digest and size; left out",
                        server, name[:80])
            return None
        kept.update(digest=digest.lower(), size=size)
    return kept


MAX_SKILL_BYTES = 1024 * 1024  # of a SKILL.md read for the model (the instructions, not the skill's other files)


def verified_text(entry: Dict[str, Any], result: Any) -> str:
    """The text of ``entry``'s SKILL.md from a ``resources/read`` result, checked against the listing.

    Raises ValueError when the read has no such content, or it does not match
    the listing's digest and size (a tampered, corrupt or stale file: not used).
    """
    import base64
    import hashlib

    contents = result.get("contents") if isinstance(result, dict) else None
    found = [c for c in contents if isinstance(c, dict) and c.get("uri") == entry["uri"]] if isinstance(contents, list) else []
    if not found:
        raise ValueError("the server's resources/read answer has no content for the skill's SKILL.md")
    content = found[0]
    if isinstance(content.get("text"), str):
        data = content["text"].encode("utf-8")
    elif isinstance(content.get("blob"), str):
        try:
            data = base64.b64decode(content["blob"], validate=True)
        except ValueError:
            raise ValueError("the server sent the SKILL.md as a blob that is not base64") from None
    else:
        raise ValueError("the server sent the SKILL.md with neither text nor blob")
    if len(data) > MAX_SKILL_BYTES:
        raise ValueError(f"the SKILL.md is over {MAX_SKILL_BYTES} bytes")
    if not entry.get("dynamic"):
        if len(data) != entry.get("size") or "sha256:" + hashlib.sha256(data).hexdigest() != entry.get("digest"):
            raise ValueError("the SKILL.md does not match the digest and size the server listed for it (changed, "
                             "corrupt or tampered with): not used; the listing is refreshed when the server reconnects")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the SKILL.md is not UTF-8 text") from None
