"""``toolscript auth``: sign in to remote MCP servers that use OAuth, list and delete the stored tokens."""

import argparse
import sys

from toolscript.errors import UserError
from toolscript.cli.output import echo, format_table, print_json

DESCRIPTION = """\
Sign in to a remote (http or sse) MCP server that needs OAuth, so toolscript
and its gateway can use it. toolscript finds the server's authorization
server (protected resource and authorization server metadata), registers
itself there (dynamic client registration or a client ID metadata document,
unless "oauth": {"clientId": ...} names a client registered by hand), and
sends you to sign in with PKCE. The browser comes back to a one-shot listener
on http://127.0.0.1:PORT/callback.

The token is stored in the state directory (0600, never printed unmasked);
the gateway refreshes it and, when it can no longer, shows the server in
state needs-auth with "needs auth: run toolscript auth NAME". A running gateway picks up a new
sign-in within a few seconds, without a restart.

Browser: $TOOLSCRIPT_AUTH_BROWSER (a command; the URL is appended or replaces
%s), else your default browser when there is a display ($BROWSER honoured);
the URL is always printed too. No browser on this machine (ssh, container)?
--paste: open the URL on any device, sign in, and paste the address the
browser ends up at (http://127.0.0.1:PORT/callback?code=...; that page will
not load there, the address bar is all that is needed).

Per-server settings in the config ("oauth" of an http/sse server):
clientId, clientSecret (write ${VAR}), scope, clientMetadataUrl (https),
redirectPort; or "oauth": false to never sign in.

examples:
  toolscript auth github                 sign in (opens the browser)
  toolscript auth github --no-browser    print the URL; the callback still lands here
  toolscript auth github --paste         sign in from another device, paste the result
  toolscript auth github --scope "repo"  a step-up: a tool said it needs more scope
  toolscript auth --list                 servers with a stored token, scope, expiry
  toolscript auth --list --json
  toolscript auth --logout github        revoke github's token at its server (when it
                                         offers RFC 7009 revocation) and delete it here

exit status: 0 signed in (or the server needs no sign-in), 1 sign-in failed
(refused, timed out, state mismatch), 2 usage error (unknown server, a stdio
server, "oauth": false), 130 interrupted. --logout: 0 deleted (revoked at the
server or not: the message and --json "revocation" say which), 1 no stored token.
"""


def add_arguments(parser: argparse.ArgumentParser, common: argparse.ArgumentParser) -> None:
    parser.add_argument("server", nargs="?", metavar="SERVER", help="the configured http/sse server to sign in to")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true", help="list the stored tokens (masked), with issuer, scope and expiry")
    what.add_argument("--logout", action="store_true",
                      help="delete SERVER's stored token, revoking it at the authorization server when it offers revocation")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--no-browser", action="store_true", help="do not open a browser; print the URL to open")
    how.add_argument("--paste", action="store_true", help="no callback listener: paste the address the browser ends up at on stdin")
    parser.add_argument("--scope", metavar="SCOPES", help='ask for these scopes (space-separated) besides those granted before: a step-up')
    parser.add_argument("--force", action="store_true", help="sign in even when the server answers without asking for it")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS", help="how long to wait for the browser (default 300)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        if args.server:
            raise UserError("--list takes no SERVER; run 'toolscript auth --list'", exit_code=2)
        return _list(args)
    if not args.server:
        raise UserError("name the server to sign in to: toolscript auth SERVER (or --list, --logout SERVER)", exit_code=2)
    if args.logout:
        return _logout(args)
    return _sign_in(args)


def _server(args: argparse.Namespace):
    from toolscript.config import load as configuration
    from toolscript.cli.args import unknown_name

    config = configuration.load_config(args.config_paths)
    server = config.servers.get(args.server)
    if server is None:
        raise unknown_name("server", args.server, list(config.servers), "toolscript config show")
    if server.type not in ("http", "sse"):
        raise UserError(f"server {server.name!r} is a {server.type} server; OAuth sign-in is for http/sse servers only", exit_code=2)
    if not server.oauth.enabled:
        raise UserError(f"server {server.name!r} has \"oauth\": false in {server.source}; remove that to sign in", exit_code=2)
    if any(key.lower() == "authorization" for key in server.headers):
        raise UserError(f"server {server.name!r} sends its own Authorization header (\"headers\" in {server.source}); "
                        "remove it to sign in with OAuth instead", exit_code=2)
    if server.config_error:
        raise UserError(f"server {server.name!r} cannot start: {server.config_error}", exit_code=2)
    return server


def _sign_in(args: argparse.Namespace) -> int:
    from toolscript.mcp.auth import login as oauth_login
    from toolscript.mcp.auth import store as oauth_store
    from toolscript.mcp.auth.flow import OAuthError

    server = _server(args)
    try:
        grant = oauth_login.sign_in(
            server, paste=args.paste, no_browser=args.no_browser, force=args.force or bool(args.scope), scope=args.scope, timeout=args.timeout
        )
    except OAuthError as exc:
        raise UserError(f"sign-in to {server.name!r} failed: {exc}") from None
    if grant is None:
        message = f"{server.name} answered without asking for authorization: nothing to do (--force signs in anyway)"
        if args.json:
            print_json({"server": server.name, "authorized": False, "needed": False, "message": message})
        else:
            print(message)
        return 0
    shown = oauth_store.describe(grant)
    if args.json:
        print_json(dict({"server": server.name, "authorized": True, "stored": oauth_store.grant_path(server.name)}, **shown))
        return 0
    echo(
        f"signed in to {server.name} (issuer {grant.issuer}, scope {grant.scope or '-'}, token {shown['accessToken']}, "
        f"expires {oauth_login.expires_in(grant)}{', refreshable' if grant.refresh_token else ''})"
    )
    print(f"stored in {oauth_store.grant_path(server.name)} (0600); a running gateway picks it up within seconds")
    return 0


def _list(args: argparse.Namespace) -> int:
    from toolscript.mcp.auth import login as oauth_login
    from toolscript.mcp.auth import store as oauth_store
    from toolscript.mcp.auth.flow import mask

    grants = oauth_store.list_grants()
    if args.json:
        print_json([dict({"server": name}, **oauth_store.describe(grant)) for name, grant in grants])
        return 0
    if not grants:
        print("no stored tokens; sign in with: toolscript auth SERVER")
        return 0
    rows = [
        (name, grant.issuer, grant.scope or "-", oauth_login.expires_in(grant), mask(grant.access_token))
        for name, grant in grants
    ]
    for line in format_table(rows, ("SERVER", "ISSUER", "SCOPE", "EXPIRES", "TOKEN")):
        print(line)
    return 0


def _logout(args: argparse.Namespace) -> int:
    from toolscript.mcp.auth import flow as oauth
    from toolscript.mcp.auth import store as oauth_store

    # Under the refresh lock: a refresh under way in a gateway finishes (and stores its tokens) first, so the
    # tokens revoked are the newest, and none is stored again after the file is gone.
    with oauth_store.refresh_lock(args.server):
        grant = oauth_store.read(args.server)
        revoked, revocation, detail = [], "none", ""
        if grant is not None:
            # Best effort, before the local copy goes: a server that cannot be reached or refuses leaves the token
            # valid until it expires, which is what the message then says. The local copy is deleted in every case.
            try:
                revoked = oauth.revoke(grant)
                revocation = "revoked" if revoked else "unsupported"
            except oauth.OAuthError as exc:
                revocation, detail = "failed", str(exc)
        removed = oauth_store.delete(args.server)
    if args.json:
        answer = {"server": args.server, "removed": removed, "revocation": revocation, "revoked": revoked}
        if detail:
            answer["detail"] = detail
        print_json(answer)
    elif not removed:
        print(f"no stored token for {args.server!r} (see 'toolscript auth --list')", file=sys.stderr)
    elif revocation == "revoked":
        what = "the refresh and access tokens" if len(revoked) == 2 else "the " + revoked[0].replace("_", " ")
        print(f"deleted the stored token of {args.server}; {what} revoked at the server")
    elif revocation == "unsupported":
        print(f"deleted the stored token of {args.server} locally only (the server offers no revocation; "
              "the token works until it expires)")
    else:
        echo(f"deleted the stored token of {args.server} locally; revoking it at the server failed: {detail} "
              "(the token works until it expires)")
    return 0 if removed else 1
