#!/usr/bin/env python3
"""Record the tools/list of real MCP servers into an evaluation set's catalogs/ (bench/search/sets/setNN/).

The recorded catalogs are the corpus of the tool-search evaluation
(bench/search.py, tests/quality/).  Recording is a one-off: the JSON
files are committed and nothing else reads the servers again.

The servers are installed into a scratch directory outside the checkout
(npm packages under DIR/npm, each PyPI package in a venv DIR/venv-NAME), started on
stdio with dummy credentials (nothing here can reach their backends), asked
for tools/list through toolscript's own MCP client, and stopped.  Each
catalog is written as::

    {"server": NAME, "package": "PACKAGE@VERSION", "registry": "npm" | "pypi",
     "recorded": "YYYY-MM-DD", "tools": [... verbatim from tools/list ...]}

    python3 bench/search/record_catalogs.py [--scratch DIR] [--install | --install-only] [--set setNN] [NAME ...]

``--set setNN`` records the servers of that set (its pin table ``SETNN_SERVERS``, in no earlier
set; set00's is ``SERVERS``) into bench/search/sets/setNN/catalogs/ (default: set00).  From set02 on,
the servers were installed with ``--install-only`` and then recorded with no network, so no server
could reach a backend::

    python3 bench/search/record_catalogs.py --set set02 --install-only
    unshare -rn sh -c 'ip link set lo up && python3 bench/search/record_catalogs.py --set set02'

A server that fails to install or start is reported on stderr and skipped;
the exit status is 1 when any failed.
"""

import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from toolscript.config.load import ServerConfig  # noqa: E402
from toolscript.mcp.client.connect import open_session  # noqa: E402

SETS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sets")
CATALOGS = os.path.join(SETS_DIR, "set00", "catalogs")
SET01_CATALOGS = os.path.join(SETS_DIR, "set01", "catalogs")
SET02_CATALOGS = os.path.join(SETS_DIR, "set02", "catalogs")
SET03_CATALOGS = os.path.join(SETS_DIR, "set03", "catalogs")
SET04_CATALOGS = os.path.join(SETS_DIR, "set04", "catalogs")
SET05_CATALOGS = os.path.join(SETS_DIR, "set05", "catalogs")
SET06_CATALOGS = os.path.join(SETS_DIR, "set06", "catalogs")
SET07_CATALOGS = os.path.join(SETS_DIR, "set07", "catalogs")
SET08_CATALOGS = os.path.join(SETS_DIR, "set08", "catalogs")
SET09_CATALOGS = os.path.join(SETS_DIR, "set09", "catalogs")
SET10_CATALOGS = os.path.join(SETS_DIR, "set10", "catalogs")
SET11_CATALOGS = os.path.join(SETS_DIR, "set11", "catalogs")
SET12_CATALOGS = os.path.join(SETS_DIR, "set12", "catalogs")
SET13_CATALOGS = os.path.join(SETS_DIR, "set13", "catalogs")
SET14_CATALOGS = os.path.join(SETS_DIR, "set14", "catalogs")
SET15_CATALOGS = os.path.join(SETS_DIR, "set15", "catalogs")
SET16_CATALOGS = os.path.join(SETS_DIR, "set16", "catalogs")
SET17_CATALOGS = os.path.join(SETS_DIR, "set17", "catalogs")
SET18_CATALOGS = os.path.join(SETS_DIR, "set18", "catalogs")
SET19_CATALOGS = os.path.join(SETS_DIR, "set19", "catalogs")
SET20_CATALOGS = os.path.join(SETS_DIR, "set20", "catalogs")
SET21_CATALOGS = os.path.join(SETS_DIR, "set21", "catalogs")
SET22_CATALOGS = os.path.join(SETS_DIR, "set22", "catalogs")

# name -> (registry, package, version, argv after the executable, env).
# "{scratch}" in args and env is replaced by the scratch directory, "{redis}"
# by the address of a stand-in Redis (see FakeRedis).  The credentials are
# placeholders: the servers only check that they are set.
SERVERS = {
    "everything": ("npm", "@modelcontextprotocol/server-everything", "2026.8.31", ["stdio"], {}),
    "filesystem": ("npm", "@modelcontextprotocol/server-filesystem", "2026.8.31", ["{scratch}/files"], {}),
    "memory": ("npm", "@modelcontextprotocol/server-memory", "2026.8.31", [], {"MEMORY_FILE_PATH": "{scratch}/memory.jsonl"}),
    "sequential-thinking": ("npm", "@modelcontextprotocol/server-sequential-thinking", "2026.8.31", [], {}),
    "github": ("npm", "@modelcontextprotocol/server-github", "2025.4.8", [], {"GITHUB_PERSONAL_ACCESS_TOKEN": "dummy"}),
    "gitlab": ("npm", "@modelcontextprotocol/server-gitlab", "2025.4.25", [],
               {"GITLAB_PERSONAL_ACCESS_TOKEN": "dummy", "GITLAB_API_URL": "http://127.0.0.1:9/api/v4"}),
    "slack": ("npm", "@modelcontextprotocol/server-slack", "2025.4.25", [], {"SLACK_BOT_TOKEN": "xoxb-dummy", "SLACK_TEAM_ID": "T00000000"}),
    "postgres": ("npm", "@modelcontextprotocol/server-postgres", "0.6.2", ["postgresql://127.0.0.1:9/none"], {}),
    "redis": ("npm", "@modelcontextprotocol/server-redis", "2025.4.25", ["redis://{redis}"], {}),
    "puppeteer": ("npm", "@modelcontextprotocol/server-puppeteer", "2025.5.12", [], {}),
    "google-maps": ("npm", "@modelcontextprotocol/server-google-maps", "0.6.2", [], {"GOOGLE_MAPS_API_KEY": "dummy"}),
    "brave-search": ("npm", "@modelcontextprotocol/server-brave-search", "0.6.2", [], {"BRAVE_API_KEY": "dummy"}),
    "gdrive": ("npm", "@modelcontextprotocol/server-gdrive", "2025.1.14", [],
               {"GDRIVE_CREDENTIALS_PATH": "{scratch}/gdrive-credentials.json", "GDRIVE_OAUTH_PATH": "{scratch}/gdrive-oauth.json"}),
    "everart": ("npm", "@modelcontextprotocol/server-everart", "0.6.2", [], {"EVERART_API_KEY": "dummy"}),
    "aws-kb": ("npm", "@modelcontextprotocol/server-aws-kb-retrieval", "0.6.2", [],
               {"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_REGION": "us-east-1"}),
    "time": ("pypi", "mcp-server-time", "2026.10.19", ["--local-timezone", "UTC"], {}),
    "fetch": ("pypi", "mcp-server-fetch", "2026.10.24", [], {}),
    "git": ("pypi", "mcp-server-git", "2026.10.19", ["--repository", "{scratch}/repo"], {}),
    "sqlite": ("pypi", "mcp-server-sqlite", "2025.4.25", ["--db-path", "{scratch}/test.db"], {}),
    "sentry": ("pypi", "mcp-server-sentry", "2025.1.14", ["--auth-token", "dummy"], {}),
}

# The held-out set (bench/search/sets/set01/): servers that are not in the development
# set above, so the ranker was never tuned on their vocabulary.  Tried and
# left out: @stripe/mcp@0.3.3 (no answer to initialize with a placeholder key)
# and mcp-server-qdrant@0.8.1 (downloads an embedding model before it serves).
SET01_SERVERS = {
    "tavily": ("npm", "tavily-mcp", "0.2.22", [], {"TAVILY_API_KEY": "tvly-dummy"}),
    "exa": ("npm", "exa-mcp-server", "3.4.1", [], {"EXA_API_KEY": "dummy"}),
    "context7": ("npm", "@upstash/context7-mcp", "4.1.1", [], {}),
    "firecrawl": ("npm", "firecrawl-mcp", "3.26.0", [], {"FIRECRAWL_API_KEY": "fc-dummy"}),
    "youtube-transcript": ("npm", "@kimtaeyoon83/mcp-server-youtube-transcript", "0.1.1", [], {}),
    "airtable": ("npm", "airtable-mcp-server", "1.14.0", [], {"AIRTABLE_API_KEY": "patdummy.dummy"}),
    "notion": ("npm", "@notionhq/notion-mcp-server", "2.5.2", [], {"NOTION_TOKEN": "ntn_dummy"}),
    "playwright": ("npm", "@playwright/mcp", "0.0.83", [], {}),
    "kubernetes": ("npm", "mcp-server-kubernetes", "4.1.7", [], {"KUBECONFIG": "{scratch}/kubeconfig"}),
    "browserbase": ("npm", "@browserbasehq/mcp-server-browserbase", "2.4.3", [],
                    {"BROWSERBASE_API_KEY": "dummy", "BROWSERBASE_PROJECT_ID": "dummy", "GEMINI_API_KEY": "dummy"}),
    "duckduckgo": ("pypi", "duckduckgo-mcp-server", "0.7.0", [], {}),
    "obsidian": ("pypi", "mcp-obsidian", "0.2.3", [], {"OBSIDIAN_API_KEY": "dummy"}),
    "calculator": ("pypi", "mcp-server-calculator", "0.2.1", [], {}),
}

# The second held-out set (bench/search/sets/set02/): servers in neither set above,
# because the first held-out set was run while the ranker changed and so is no
# longer held out.  Recorded with no network at all (see bench/search/sets/set02/README.md):
# each URL below is a closed local port.  Tried and left out:
# @upstash/mcp-server@0.3.0 and @supabase/mcp-server-supabase@0.13.0 (call their
# cloud API before they list tools), chroma-mcp@0.2.6 (prints a banner on stdout,
# which is the JSON-RPC channel), @tacticlaunch/mcp-linear@1.4.3 (198 tools; the
# smaller linear-mcp-server stands for Linear), @roychri/mcp-server-asana@1.8.0
# (41 tools, left out to keep the set near 200), @neondatabase/mcp-server-neon@0.6.5
# (a dependency is a GitHub tarball this machine cannot fetch).  mcp-atlassian
# runs with its default toolsets (35 of its 98 tools).
SET02_SERVERS = {
    "atlassian": ("pypi", "mcp-atlassian", "0.23.1", [],
                  {"JIRA_URL": "http://127.0.0.1:9", "JIRA_USERNAME": "dummy@example.com", "JIRA_API_TOKEN": "dummy",
                   "CONFLUENCE_URL": "http://127.0.0.1:9/wiki", "CONFLUENCE_USERNAME": "dummy@example.com",
                   "CONFLUENCE_API_TOKEN": "dummy", "TOOLSETS": "default"}),
    "linear": ("npm", "linear-mcp-server", "0.1.0", [], {"LINEAR_API_KEY": "lin_api_dummy"}),
    "circleci": ("npm", "@circleci/mcp-server-circleci", "0.20.0", [],
                 {"CIRCLECI_TOKEN": "dummy", "CIRCLECI_BASE_URL": "http://127.0.0.1:9"}),
    "datadog": ("npm", "@winor30/mcp-server-datadog", "1.8.0", [], {"DATADOG_API_KEY": "dummy", "DATADOG_APP_KEY": "dummy"}),
    "elasticsearch": ("npm", "@elastic/mcp-server-elasticsearch", "0.3.1", [],
                      {"ES_URL": "http://127.0.0.1:9", "ES_API_KEY": "dummy"}),
    "excel": ("npm", "@negokaz/excel-mcp-server", "0.12.0", [], {}),
    "figma": ("npm", "figma-developer-mcp", "0.13.2", ["--stdio"], {"FIGMA_API_KEY": "dummy", "DO_NOT_TRACK": "1"}),
    "airbnb": ("npm", "@openbnb/mcp-server-airbnb", "0.3.0", [], {}),
    "discord": ("npm", "mcp-discord", "1.3.4", [], {"DISCORD_TOKEN": "dummy"}),
    "hubspot": ("npm", "@hubspot/mcp-server", "0.4.0", [], {"PRIVATE_APP_ACCESS_TOKEN": "pat-dummy", "HUBSPOT_ACCESS_TOKEN": "pat-dummy"}),
    "shopify-dev": ("npm", "@shopify/dev-mcp", "1.16.0", [], {}),
    "mongodb": ("npm", "mongodb-mcp-server", "3.0.4", [], {"MDB_MCP_TELEMETRY": "disabled", "DO_NOT_TRACK": "1"}),
    "google-sheets": ("pypi", "mcp-google-sheets", "0.6.3", [], {"SERVICE_ACCOUNT_PATH": "{scratch}/service-account.json"}),
}

# The third held-out set (bench/search/sets/set03/): servers in none of the sets above,
# built while held-out 2 was still unranked so that a fresh set is ready when
# tuning moves on to it.  Installed with --install-only and recorded with no
# network, as held-out 2 (see bench/search/sets/set03/README.md).  Tried and left out:
# @benborla29/mcp-server-mysql@2.0.9 (exits at start-up when MySQL is not there),
# @heroku/mcp-server@1.2.8 (exits at start-up: cannot resolve an MCP SDK module),
# @delorenj/mcp-server-trello@1.8.1 (57 tools) and @cloudflare/mcp-server-cloudflare@0.2.0
# (89 tools), both left out for size; mcp-server-docker, pagerduty-mcp and
# mcp-server-bigquery (PyPI) need Python 3.12 or 3.13, this machine has 3.11.
# wikipedia-mcp lists every tool twice (NAME and wikipedia_NAME); kept verbatim.
SET03_SERVERS = {
    "asana": ("npm", "@roychri/mcp-server-asana", "1.8.0", [], {"ASANA_ACCESS_TOKEN": "dummy"}),
    "gmail": ("npm", "@gongrzhe/server-gmail-autoauth-mcp", "1.1.11", [], {"HOME": "{scratch}/home"}),
    "google-calendar": ("npm", "@cocal/google-calendar-mcp", "2.6.3", [],
                        {"HOME": "{scratch}/home", "GOOGLE_OAUTH_CREDENTIALS": "{scratch}/home/gcp-oauth.keys.json"}),
    "salesforce": ("npm", "@tsmztech/mcp-server-salesforce", "0.0.6", [],
                   {"SALESFORCE_CONNECTION_TYPE": "User_Password", "SALESFORCE_USERNAME": "dummy@example.com",
                    "SALESFORCE_PASSWORD": "dummy", "SALESFORCE_TOKEN": "dummy",
                    "SALESFORCE_INSTANCE_URL": "http://127.0.0.1:9"}),
    "netlify": ("npm", "@netlify/mcp", "1.15.1", [], {"NETLIFY_PERSONAL_ACCESS_TOKEN": "dummy"}),
    "clickhouse": ("pypi", "mcp-clickhouse", "0.7.0", [],
                   {"CLICKHOUSE_HOST": "127.0.0.1", "CLICKHOUSE_PORT": "9", "CLICKHOUSE_USER": "dummy",
                    "CLICKHOUSE_PASSWORD": "dummy", "CLICKHOUSE_SECURE": "false"}),
    "duckdb": ("pypi", "mcp-server-duckdb", "1.1.0", ["--db-path", "{scratch}/test.duckdb"], {}),
    "aws-docs": ("pypi", "awslabs.aws-documentation-mcp-server", "1.2.3", [], {"FASTMCP_LOG_LEVEL": "ERROR"}),
    "cloudwatch": ("pypi", "awslabs.cloudwatch-mcp-server", "0.3.1", [],
                   {"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_REGION": "us-east-1",
                    "FASTMCP_LOG_LEVEL": "ERROR"}),
    "prometheus": ("pypi", "prometheus-mcp-server", "1.6.2", [], {"PROMETHEUS_URL": "http://127.0.0.1:9"}),
    "arxiv": ("pypi", "arxiv-mcp-server", "0.8.2", ["--storage-path", "{scratch}/arxiv-papers"], {}),
    "wikipedia": ("pypi", "wikipedia-mcp", "2.0.1", [], {}),
}

# The fourth held-out set (bench/search/sets/set04/): servers in none of the sets above,
# built while held-out 3 was run once to report a round, so that a fresh set is
# ready when tuning moves on to held-out 3.  Installed with --install-only and
# recorded with no network, as held-out 2 and 3 (see bench/search/sets/set04/README.md,
# which also lists the servers tried and left out).  Tried and left out:
# mcp-snowflake-server@0.4.0 (connects to Snowflake before it serves MCP),
# @dynatrace-oss/dynatrace-mcp-server@2.1.2 (exits at start-up on Node 20),
# @mondaydotcomorg/monday-api-mcp@3.3.0 (92 tools), redis-mcp-server@0.5.1 (53)
# and office-word-mcp-server@1.1.11 (54), left out to keep the set under 250 tools.
SET04_SERVERS = {
    "mapbox": ("npm", "@mapbox/mcp-server", "0.14.0", [], {"MAPBOX_ACCESS_TOKEN": "pk.dummy"}),
    "pinecone": ("npm", "@pinecone-database/mcp", "0.3.0", [], {"PINECONE_API_KEY": "dummy"}),
    "shortcut": ("npm", "@shortcut/mcp", "0.25.0", [], {"SHORTCUT_API_TOKEN": "dummy"}),
    "sentry-cloud": ("npm", "@sentry/mcp-server", "0.39.0", ["--access-token=dummy", "--host=127.0.0.1:9"],
                     {"SENTRY_ACCESS_TOKEN": "dummy"}),
    "jenkins": ("pypi", "mcp-jenkins", "3.6.0", [],
                {"JENKINS_URL": "http://127.0.0.1:9", "JENKINS_USERNAME": "dummy", "JENKINS_PASSWORD": "dummy"}),
    "dynamodb": ("pypi", "awslabs.dynamodb-mcp-server", "2.1.8", [],
                 {"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_REGION": "us-east-1",
                  "FASTMCP_LOG_LEVEL": "ERROR"}),
    "mssql": ("pypi", "microsoft_sql_server_mcp", "0.1.0", [],
              {"MSSQL_SERVER": "127.0.0.1", "MSSQL_PORT": "9", "MSSQL_USER": "dummy", "MSSQL_PASSWORD": "dummy",
               "MSSQL_DATABASE": "dummy"}),
    "line": ("npm", "@line/line-bot-mcp-server", "0.5.0", [],
             {"CHANNEL_ACCESS_TOKEN": "dummy", "DESTINATION_USER_ID": "Udummy"}),
    "launchdarkly": ("npm", "@launchdarkly/mcp-server", "0.6.2", ["start", "--api-key", "api-dummy"], {}),
    "browserstack": ("npm", "@browserstack/mcp-server", "1.4.2", [],
                     {"BROWSERSTACK_USERNAME": "dummy", "BROWSERSTACK_ACCESS_KEY": "dummy"}),
    "neo4j": ("pypi", "mcp-neo4j-cypher", "0.6.0", [],
              {"NEO4J_URI": "bolt://127.0.0.1:9", "NEO4J_USERNAME": "dummy", "NEO4J_PASSWORD": "dummy"}),
    "jupyter": ("pypi", "jupyter-mcp-server", "2.2.4", [],
                {"JUPYTER_URL": "http://127.0.0.1:9", "JUPYTER_TOKEN": "dummy", "DOCUMENT_URL": "http://127.0.0.1:9",
                 "RUNTIME_URL": "http://127.0.0.1:9", "DOCUMENT_ID": "notebook.ipynb", "DOCUMENT_TOKEN": "dummy",
                 "RUNTIME_TOKEN": "dummy"}),
}

# The fifth held-out set (bench/search/sets/set05/): servers in none of the sets above,
# built while held-out 4 was run once, so that a fresh set is ready when tuning
# moves on to held-out 4.  Installed with --install-only and recorded with no
# network, as held-out 2, 3 and 4 (see bench/search/sets/set05/README.md, which also
# lists the servers tried and left out).  Tried and left out: @twilio-alpha/mcp@0.7.0
# (197 tools for its one core API) and paper-search-mcp@0.1.4 (57), for size;
# logfire-mcp@0.9.0 (exits at start-up: "Use the remote Logfire MCP server
# instead"); semgrep-mcp@0.9.0 (lists one tool, a deprecation notice).
SET05_SERVERS = {
    "chrome-devtools": ("npm", "chrome-devtools-mcp", "1.11.0", [], {}),
    "plane": ("npm", "@makeplane/plane-mcp-server", "0.1.5", [],
              {"PLANE_API_KEY": "dummy", "PLANE_WORKSPACE_SLUG": "dummy", "PLANE_API_HOST_URL": "http://127.0.0.1:9"}),
    "deepl": ("npm", "deepl-mcp-server", "0.1.3-beta.0", [], {"DEEPL_API_KEY": "dummy:fx"}),
    "argocd": ("npm", "argocd-mcp", "0.9.0", ["stdio"],
               {"ARGOCD_BASE_URL": "http://127.0.0.1:9", "ARGOCD_API_TOKEN": "dummy"}),
    "sonarqube": ("npm", "sonarqube-mcp-server", "1.10.21", [],
                  {"SONARQUBE_TOKEN": "dummy", "SONARQUBE_URL": "http://127.0.0.1:9"}),
    "rollbar": ("npm", "@rollbar/mcp-server", "0.6.0", [], {"ROLLBAR_ACCESS_TOKEN": "dummy"}),
    "bitbucket": ("npm", "@aashari/mcp-server-atlassian-bitbucket", "3.1.0", [],
                  {"ATLASSIAN_BITBUCKET_USERNAME": "dummy", "ATLASSIAN_BITBUCKET_APP_PASSWORD": "dummy"}),
    "perplexity": ("npm", "@perplexity-ai/mcp-server", "1.2.1", [], {"PERPLEXITY_API_KEY": "pplx-dummy"}),
    "searxng": ("npm", "mcp-searxng", "2.4.0", [], {"SEARXNG_URL": "http://127.0.0.1:9"}),
    "yahoo-finance": ("pypi", "mcp-yahoo-finance", "0.2.0", [], {}),
    "eks": ("pypi", "awslabs.eks-mcp-server", "0.2.1", [],
            {"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_REGION": "us-east-1",
             "FASTMCP_LOG_LEVEL": "ERROR"}),
    "aws-pricing": ("pypi", "awslabs.aws-pricing-mcp-server", "1.1.1", [],
                    {"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_REGION": "us-east-1",
                     "FASTMCP_LOG_LEVEL": "ERROR"}),
    "powerpoint": ("pypi", "office-powerpoint-mcp-server", "2.0.7", [], {}),
    "motherduck": ("pypi", "mcp-server-motherduck", "1.1.0", ["--db-path", "{scratch}/motherduck.duckdb"], {}),
}

# The sixth held-out set (bench/search/sets/set06/): servers in none of the sets above,
# built after held-out 5 was run once, so that a fresh set is ready for the next
# round.  Installed with --install-only and recorded with no network, as held-out
# 2 to 5 (see bench/search/sets/set06/README.md, which also lists the servers tried and
# left out).  Two are recorded with a flag that limits their tools, kept
# verbatim: Paddle with --tools=read-only (41 of its 63 default tools) and
# DigitalOcean with --services droplets (43 of 353).  Tried and left out:
# @bitwarden/mcp-server@2026.7.0 (59 tools), @xeroapi/xero-mcp-server@0.0.17 (51)
# and alpaca-mcp-server@2.4.0 (72), for size; @railway/mcp-server@0.1.12 (exits:
# deprecated, moved into the Railway CLI); @azure-devops/mcp@2.10.0 and
# @confluentinc/mcp-confluent@1.5.0 (native dependencies that do not build here);
# youtrack-mcp@0.2.0 (PyPI: no executable).
SET06_SERVERS = {
    "desktop-commander": ("npm", "@wonderwhy-er/desktop-commander", "0.2.52", [], {"HOME": "{scratch}/home"}),
    "paddle": ("npm", "@paddle/paddle-mcp", "0.1.6",
               ["--api-key=dummy", "--environment=sandbox", "--tools=read-only"], {}),
    "digitalocean": ("npm", "@digitalocean/mcp", "1.0.70", ["--services", "droplets"],
                     {"DIGITALOCEAN_API_TOKEN": "dummy"}),
    "huggingface": ("npm", "@llmindset/hf-mcp-server", "0.4.23", [], {"HF_TOKEN": "hf_dummy"}),
    "lara": ("npm", "@translated/lara-mcp", "1.0.6", [],
             {"LARA_ACCESS_KEY_ID": "dummy", "LARA_ACCESS_KEY_SECRET": "dummy"}),
    "pdf-reader": ("npm", "@sylphx/pdf-reader-mcp", "2.4.0", [], {}),
    "code-runner": ("npm", "mcp-server-code-runner", "0.1.8", [], {}),
    "browser-tools": ("npm", "@agentdeskai/browser-tools-mcp", "1.2.1", [], {}),
    "database": ("npm", "@executeautomation/database-server", "1.1.0", ["{scratch}/ea-database.sqlite"], {}),
    "elevenlabs": ("pypi", "elevenlabs-mcp", "0.12.2", [],
                   {"ELEVENLABS_API_KEY": "dummy", "ELEVENLABS_MCP_BASE_PATH": "{scratch}/elevenlabs"}),
    "tree-sitter": ("pypi", "mcp-server-tree-sitter", "0.7.0", [], {"HOME": "{scratch}/home"}),
    "email": ("pypi", "mcp-email-server", "1.13.3", ["stdio"], {"HOME": "{scratch}/home"}),
    "google-analytics": ("pypi", "analytics-mcp", "0.8.0", [], {"HOME": "{scratch}/home"}),
}

# Placeholder AWS credentials: the awslabs servers build a boto3 session at start-up and
# only use it when a tool is called (recorded with no network, so nothing can reach AWS).
AWS_PLACEHOLDER_ENV = {"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy", "AWS_REGION": "us-east-1", "FASTMCP_LOG_LEVEL": "ERROR", "HOME": "{scratch}/home"}

# The seventh held-out set (bench/search/sets/set07/): servers in none of the sets above,
# built after held-out 6 was run once, so that a fresh set is ready for the next
# round.  Installed with --install-only and recorded with no network, as held-out
# 2 to 6 (see bench/search/sets/set07/README.md, which also lists the servers tried and
# left out).  Microsoft 365 is recorded with --preset tasks (To Do and Planner,
# 33 tools; all presets list 188), kept verbatim.  Tried and left out:
# freshdesk-mcp@1.2.0 (59 tools), for size; mcp-server-rabbitmq@2.2.0 (exits at
# start-up with its fastmcp, and with fastmcp<2.11 on a pydantic error).
SET07_SERVERS = {
    "git-mcp": ("npm", "@cyanheads/git-mcp-server", "2.15.3", [], {"HOME": "{scratch}/home"}),
    "browsermcp": ("npm", "@browsermcp/mcp", "0.1.3", [], {}),
    "square": ("npm", "square-mcp-server", "0.1.2", ["start"], {"ACCESS_TOKEN": "dummy", "SANDBOX": "true"}),
    "brightdata": ("npm", "@brightdata/mcp", "2.11.3", [], {"API_TOKEN": "dummy"}),
    "ms-365": ("npm", "@softeria/ms-365-mcp-server", "0.155.0", ["--preset", "tasks"], {"HOME": "{scratch}/home"}),
    "iam": ("pypi", "awslabs.iam-mcp-server", "1.1.2", [], dict(AWS_PLACEHOLDER_ENV)),
    "ecs": ("pypi", "awslabs.ecs-mcp-server", "0.1.37", [], dict(AWS_PLACEHOLDER_ENV)),
    "cloudtrail": ("pypi", "awslabs.cloudtrail-mcp-server", "0.1.1", [], dict(AWS_PLACEHOLDER_ENV)),
    "blender": ("pypi", "blender-mcp", "2.0.0", [], {"HOME": "{scratch}/home"}),
    "reddit": ("pypi", "mcp-server-reddit", "0.2.1", [], {}),
    "serper": ("pypi", "serper-mcp-server", "0.0.10", [], {"SERPER_API_KEY": "dummy"}),
    "zotero": ("pypi", "zotero-mcp", "0.3.1", [], {"ZOTERO_LOCAL": "true", "HOME": "{scratch}/home"}),
    "weather": ("pypi", "mcp-weather-server", "0.6.1", [], {}),
}

# The eighth held-out set (bench/search/sets/set08/): servers in none of the sets above,
# built after held-out 7 was run once, so that a fresh set is ready for the next
# round.  Installed with --install-only and recorded with no network, as held-out
# 2 to 7 (see bench/search/sets/set08/README.md, which also lists the servers tried and
# left out: none failed to start; the ones missing from npm/PyPI are named there).
# @vapi-ai/mcp-server's executable is "mcp-server", as @mapbox/mcp-server's is:
# one npm prefix holds only one of them, so record held-out 4 and 8 from separate scratch dirs.
SET08_SERVERS = {
    "chart": ("npm", "@antv/mcp-server-chart", "0.9.10", [], {}),
    "pubmed": ("npm", "@cyanheads/pubmed-mcp-server", "2.7.4", [], {"HOME": "{scratch}/home"}),
    "amap": ("npm", "@amap/amap-maps-mcp-server", "0.0.8", [], {"AMAP_MAPS_API_KEY": "dummy"}),
    "mobile": ("npm", "@mobilenext/mobile-mcp", "1.0.4", [], {"HOME": "{scratch}/home"}),
    "shadcn": ("npm", "@jpisnice/shadcn-ui-mcp-server", "2.0.0", [], {}),
    "vapi": ("npm", "@vapi-ai/mcp-server", "0.0.11", [], {"VAPI_TOKEN": "dummy"}),
    "opensearch": ("pypi", "opensearch-mcp-server-py", "0.12.0", [],
                   {"OPENSEARCH_URL": "http://127.0.0.1:9", "OPENSEARCH_USERNAME": "dummy",
                    "OPENSEARCH_PASSWORD": "dummy", "HOME": "{scratch}/home"}),
    "sns-sqs": ("pypi", "awslabs.amazon-sns-sqs-mcp-server", "2.1.1", [],
                dict(AWS_PLACEHOLDER_ENV, AWS_CONFIG_FILE="{scratch}/aws-config")),
    "neo4j-modeling": ("pypi", "mcp-neo4j-data-modeling", "0.8.2", [], {"HOME": "{scratch}/home"}),
    "odoo": ("pypi", "mcp-server-odoo", "0.9.0", [],
             {"ODOO_URL": "http://127.0.0.1:9", "ODOO_DB": "dummy", "ODOO_API_KEY": "dummy", "HOME": "{scratch}/home"}),
    "aws-support": ("pypi", "awslabs.aws-support-mcp-server", "0.1.23", [], dict(AWS_PLACEHOLDER_ENV)),
    "redshift": ("pypi", "awslabs.redshift-mcp-server", "0.1.2", [], dict(AWS_PLACEHOLDER_ENV)),
}

# The ninth held-out set (bench/search/sets/set09/): servers in none of the sets above,
# built after held-out 8 was made, so that a fresh set is ready for the next
# round.  Installed with --install-only and recorded with no network, as held-out
# 2 to 8 (see bench/search/sets/set09/README.md, which also lists the servers tried and
# left out: podman-mcp-server, caldav-mcp, @auth0/auth0-mcp-server, @21st-dev/magic,
# mcp-telegram and mcp-server-starrocks do not start here without podman, a backend
# or a native addon; @coingecko/coingecko-mcp does not install; the awslabs billing
# server, 47 tools, was left out for size).
SET09_SERVERS = {
    "gcp-observability": ("npm", "@google-cloud/observability-mcp", "0.2.3", [], {"HOME": "{scratch}/home"}),
    "azure-devops": ("npm", "@tiberriver256/mcp-server-azure-devops", "0.1.48", [],
                     {"AZURE_DEVOPS_ORG_URL": "http://127.0.0.1:9/dummy", "AZURE_DEVOPS_AUTH_METHOD": "pat",
                      "AZURE_DEVOPS_PAT": "dummy", "AZURE_DEVOPS_DEFAULT_PROJECT": "dummy"}),
    "glean": ("npm", "@gleanwork/local-mcp-server", "0.7.6", [], {"GLEAN_INSTANCE": "dummy", "GLEAN_API_TOKEN": "dummy"}),
    "currents": ("npm", "@currents/mcp", "2.1.1", [], {"CURRENTS_API_KEY": "dummy"}),
    "webflow": ("npm", "webflow-mcp-server", "1.0.0", [], {"WEBFLOW_TOKEN": "dummy"}),
    "ableton": ("pypi", "ableton-mcp", "1.4.5", [], {"HOME": "{scratch}/home"}),
    "biomcp": ("pypi", "biomcp-python", "0.7.3", ["run"], {"HOME": "{scratch}/home"}),
    "pandoc": ("pypi", "mcp-pandoc", "0.11.1", [], {"HOME": "{scratch}/home"}),
    "opentofu": ("npm", "@opentofu/opentofu-mcp-server", "0.1.5", [], {}),
    "taskmanager": ("npm", "@kazuph/mcp-taskmanager", "1.1.1", [], {"TASK_MANAGER_FILE_PATH": "{scratch}/files/tasks.json"}),
    "valkey": ("pypi", "awslabs.valkey-mcp-server", "1.1.1", [],
               dict(AWS_PLACEHOLDER_ENV, VALKEY_HOST="127.0.0.1", VALKEY_PORT="9")),
    "aws-location": ("pypi", "awslabs.aws-location-mcp-server", "2.1.1", [], dict(AWS_PLACEHOLDER_ENV)),
}

# The tenth held-out set (bench/search/sets/set10/): servers in none of the sets above,
# built after held-out 9 was run once, so that a fresh set is ready for the next
# round.  Installed with --install-only and recorded with no network, as held-out
# 2 to 9 (see bench/search/sets/set10/README.md, which also lists the servers tried and
# left out).
SET10_SERVERS = {
    "turso": ("npm", "mcp-turso-cloud", "0.0.11", [], {"TURSO_API_TOKEN": "dummy", "TURSO_ORGANIZATION": "dummy"}),
    "youtube-data": ("npm", "youtube-data-mcp-server", "1.0.16", [], {"YOUTUBE_API_KEY": "dummy"}),
    "influxdb": ("npm", "influxdb-mcp-server", "0.2.0", [],
                 {"INFLUXDB_TOKEN": "dummy", "INFLUXDB_URL": "http://127.0.0.1:9", "INFLUXDB_ORG": "dummy"}),
    "nx": ("npm", "nx-mcp", "0.25.0", ["{scratch}/repo"], {"HOME": "{scratch}/home"}),
    "cloudinary": ("npm", "@cloudinary/asset-management-mcp", "0.11.0", ["start"],
                   {"CLOUDINARY_CLOUD_NAME": "dummy", "CLOUDINARY_API_KEY": "dummy", "CLOUDINARY_API_SECRET": "dummy"}),
    "n8n": ("npm", "n8n-mcp", "2.87.0", [],
            {"MCP_MODE": "stdio", "LOG_LEVEL": "error", "DISABLE_CONSOLE_OUTPUT": "true", "HOME": "{scratch}/home"}),
    "mui": ("npm", "@mui/mcp", "0.1.6", [], {"HOME": "{scratch}/home"}),
    "mastra-docs": ("npm", "@mastra/mcp-docs-server", "1.2.27", [], {"HOME": "{scratch}/home"}),
    "meilisearch": ("pypi", "meilisearch-mcp", "0.7.0", [],
                    {"MEILI_HTTP_ADDR": "http://127.0.0.1:9", "MEILI_MASTER_KEY": "dummy", "HOME": "{scratch}/home"}),
    "minimax": ("pypi", "minimax-mcp", "0.0.19", [],
                {"MINIMAX_API_KEY": "dummy", "MINIMAX_MCP_BASE_PATH": "{scratch}/files",
                 "MINIMAX_API_HOST": "http://127.0.0.1:9", "HOME": "{scratch}/home"}),
    "airflow": ("pypi", "mcp-server-apache-airflow", "0.2.10", [],
                {"AIRFLOW_HOST": "http://127.0.0.1:9", "AIRFLOW_USERNAME": "dummy", "AIRFLOW_PASSWORD": "dummy"}),
    "amazon-mq": ("pypi", "awslabs.amazon-mq-mcp-server", "2.1.1", [],
                  dict(AWS_PLACEHOLDER_ENV, AWS_CONFIG_FILE="{scratch}/aws-config")),
}

# The eleventh held-out set (bench/search/sets/set11/): servers in none of the sets above,
# built while held-out 10 became a development set, so that a fresh set is ready
# for the next round.  Installed with --install-only and recorded with no network,
# as held-out 2 to 10 (see bench/search/sets/set11/README.md, which also lists the servers
# tried and left out).
SET11_SERVERS = {
    "baidu-map": ("npm", "@baidumap/mcp-server-baidu-map", "1.0.5", [], {"BAIDU_MAP_API_KEY": "dummy"}),
    "godot": ("npm", "@coding-solo/godot-mcp", "0.1.1", [], {"HOME": "{scratch}/home"}),
    "miro": ("npm", "@llmindset/mcp-miro", "0.1.1", ["--token", "dummy"], {}),
    "firebase": ("npm", "@gannonh/firebase-mcp", "1.4.9", [],
                 {"SERVICE_ACCOUNT_KEY_PATH": "{scratch}/service-account.json",
                  "FIREBASE_STORAGE_BUCKET": "dummy.appspot.com", "HOME": "{scratch}/home"}),
    "strava": ("npm", "@r-huijts/strava-mcp-server", "1.2.1", [],
               {"STRAVA_CLIENT_ID": "dummy", "STRAVA_CLIENT_SECRET": "dummy", "STRAVA_ACCESS_TOKEN": "dummy",
                "STRAVA_REFRESH_TOKEN": "dummy", "HOME": "{scratch}/home"}),
    "astra-db": ("npm", "@datastax/astra-db-mcp", "1.2.2", [],
                 {"ASTRA_DB_APPLICATION_TOKEN": "AstraCS:dummy", "ASTRA_DB_API_ENDPOINT": "http://127.0.0.1:9"}),
    "aws-serverless": ("pypi", "awslabs.aws-serverless-mcp-server", "0.2.0", [], dict(AWS_PLACEHOLDER_ENV)),
    "elasticache": ("pypi", "awslabs.elasticache-mcp-server", "0.2.1", [], dict(AWS_PLACEHOLDER_ENV)),
    "aws-dataprocessing": ("pypi", "awslabs.aws-dataprocessing-mcp-server", "0.2.2", [], dict(AWS_PLACEHOLDER_ENV)),
    "scrapegraph": ("pypi", "scrapegraph-mcp", "1.0.1", [], {"SGAI_API_KEY": "dummy", "HOME": "{scratch}/home"}),
    "es-search": ("pypi", "elasticsearch-mcp-server", "2.1.6", [],
                  {"ELASTICSEARCH_HOSTS": "http://127.0.0.1:9", "ELASTICSEARCH_USERNAME": "dummy",
                   "ELASTICSEARCH_PASSWORD": "dummy", "HOME": "{scratch}/home"}),
    "mysql": ("pypi", "mysql-mcp-server", "0.4.4", [],
              {"MYSQL_HOST": "127.0.0.1", "MYSQL_PORT": "9", "MYSQL_USER": "dummy", "MYSQL_PASSWORD": "dummy",
               "MYSQL_DATABASE": "dummy"}),
}

# The twelfth held-out set (bench/search/sets/set12/): servers in none of the sets above,
# built while held-out 11 became a development set, so that a fresh set is ready
# for the next round.  Installed with --install-only and recorded with no network,
# as held-out 2 to 11 (see bench/search/sets/set12/README.md, which also lists the servers
# tried and left out).
SET12_SERVERS = {
    "codacy": ("npm", "@codacy/codacy-mcp", "0.5.9", [], {"CODACY_ACCOUNT_TOKEN": "dummy", "HOME": "{scratch}/home"}),
    "next-devtools": ("npm", "next-devtools-mcp", "0.4.0", [], {"HOME": "{scratch}/home"}),
    "omnifocus": ("npm", "omnifocus-mcp", "1.16.0", [], {"HOME": "{scratch}/home"}),
    "prisma": ("npm", "prisma", "7.10.1", ["mcp"], {"HOME": "{scratch}/home", "CHECKPOINT_DISABLE": "1"}),
    "jira": ("npm", "@aashari/mcp-server-atlassian-jira", "3.3.0", [],
             {"ATLASSIAN_SITE_NAME": "dummy", "ATLASSIAN_USER_EMAIL": "dummy@example.com",
              "ATLASSIAN_API_TOKEN": "dummy", "HOME": "{scratch}/home"}),
    "ida-pro": ("pypi", "ida-pro-mcp", "1.4.0", [], {"HOME": "{scratch}/home"}),
    "appsync": ("pypi", "awslabs.aws-appsync-mcp-server", "0.2.1", [], dict(AWS_PLACEHOLDER_ENV)),
    "s3-tables": ("pypi", "awslabs.s3-tables-mcp-server", "0.1.1", [], dict(AWS_PLACEHOLDER_ENV)),
    "appsignals": ("pypi", "awslabs.cloudwatch-applicationsignals-mcp-server", "0.2.1", [], dict(AWS_PLACEHOLDER_ENV)),
    "documentdb": ("pypi", "awslabs.documentdb-mcp-server", "2.0.1", [], dict(AWS_PLACEHOLDER_ENV)),
    "timestream-influxdb": ("pypi", "awslabs.timestream-for-influxdb-mcp-server", "0.1.2", [],
                            dict(AWS_PLACEHOLDER_ENV)),
    "memgraph": ("pypi", "mcp-memgraph", "0.4.1", [],
                 {"MEMGRAPH_URL": "bolt://127.0.0.1:9", "MEMGRAPH_USER": "dummy", "MEMGRAPH_PASSWORD": "dummy",
                  "HOME": "{scratch}/home"}),
}

# The thirteenth held-out set (bench/search/sets/set13/): servers in none of the sets above,
# built while held-out 12 became a development set, so that a fresh set is ready
# for the next round.  Installed with --install-only and recorded with no network,
# as held-out 2 to 12 (see bench/search/sets/set13/README.md, which also lists the servers
# tried and left out).
SET13_SERVERS = {
    "clarity": ("npm", "@microsoft/clarity-mcp-server", "2.0.1", ["--clarity_api_token", "dummy"],
                {"HOME": "{scratch}/home"}),
    "kubernetes-go": ("npm", "kubernetes-mcp-server", "0.0.67", ["--kubeconfig", "{scratch}/kubeconfig"],
                      {"HOME": "{scratch}/home"}),
    "keyspaces": ("pypi", "awslabs.amazon-keyspaces-mcp-server", "0.0.19", [], dict(AWS_PLACEHOLDER_ENV)),
    "neptune": ("pypi", "awslabs.amazon-neptune-mcp-server", "1.1.1", [],
                dict(AWS_PLACEHOLDER_ENV, NEPTUNE_ENDPOINT="neptune-db://127.0.0.1")),
    "aurora-dsql": ("pypi", "awslabs.aurora-dsql-mcp-server", "1.1.4",
                    ["--cluster_endpoint", "127.0.0.1", "--database_user", "dummy", "--region", "us-east-1"],
                    dict(AWS_PLACEHOLDER_ENV)),
    "finch": ("pypi", "awslabs.finch-mcp-server", "0.2.0", [], dict(AWS_PLACEHOLDER_ENV)),
    "memcached": ("pypi", "awslabs.memcached-mcp-server", "1.1.1", [],
                  dict(AWS_PLACEHOLDER_ENV, MEMCACHED_HOST="127.0.0.1", MEMCACHED_PORT="9")),
    "aurora-postgres": ("pypi", "awslabs.postgres-mcp-server", "1.2.2", [], dict(AWS_PLACEHOLDER_ENV)),
    "playwright-ea": ("npm", "@executeautomation/playwright-mcp-server", "1.0.12", [], {"HOME": "{scratch}/home"}),
    "postgres-henkey": ("npm", "@henkey/postgres-mcp-server", "1.0.7",
                        ["--connection-string", "postgresql://dummy:dummy@127.0.0.1:9/dummy"], {"HOME": "{scratch}/home"}),
    "sagemaker-ai": ("pypi", "awslabs.sagemaker-ai-mcp-server", "1.1.0", [], dict(AWS_PLACEHOLDER_ENV)),
    "wa-security": ("pypi", "awslabs.well-architected-security-mcp-server", "0.2.0", [], dict(AWS_PLACEHOLDER_ENV)),
}

# The fourteenth held-out set (bench/search/sets/set14/): in none of the sets above,
# all outside AWS (set 13 was 8 of 12 awslabs servers).  This machine's PyPI
# holds no unused MCP server packages, so all of them are from npm.  Tried and
# left out: @bytebase/dbhub@1.4.0 (connects before it serves; its --demo needs
# node:sqlite, which Node 20 lacks) and @21st-dev/magic@0.2.3 (fetches its tool
# list from 21st.dev).
SET14_SERVERS = {
    "task-master": ("npm", "task-master-ai", "0.43.1", [],
                    {"HOME": "{scratch}/home", "ANTHROPIC_API_KEY": "dummy"}),
    "azure": ("npm", "@azure/mcp", "2.0.5", ["server", "start"],
              {"HOME": "{scratch}/home", "AZURE_MCP_COLLECT_TELEMETRY": "false"}),
    "cloud-run": ("npm", "@google-cloud/cloud-run-mcp", "1.10.0", [],
                  {"HOME": "{scratch}/home", "GOOGLE_CLOUD_PROJECT": "dummy", "GOOGLE_CLOUD_REGION": "us-central1"}),
    "convex": ("npm", "convex", "1.48.0", ["mcp", "start"], {"HOME": "{scratch}/home"}),
    "eslint": ("npm", "@eslint/mcp", "0.3.13", [], {"HOME": "{scratch}/home"}),
    "dataforseo": ("npm", "dataforseo-mcp-server", "3.1.1", [],
                   {"HOME": "{scratch}/home", "DATAFORSEO_USERNAME": "dummy", "DATAFORSEO_PASSWORD": "dummy"}),
    "shrimp-tasks": ("npm", "mcp-shrimp-task-manager", "1.0.21", [],
                     {"HOME": "{scratch}/home", "DATA_DIR": "{scratch}/shrimp-data"}),
    "search-console": ("npm", "mcp-server-gsc", "0.3.0", [],
                       {"HOME": "{scratch}/home", "GOOGLE_APPLICATION_CREDENTIALS": "{scratch}/service-account.json"}),
    "xcodebuild": ("npm", "xcodebuildmcp", "2.7.0", ["mcp"], {"HOME": "{scratch}/home"}),
    "opik": ("npm", "opik-mcp", "2.0.2", [],
             {"HOME": "{scratch}/home", "OPIK_API_KEY": "dummy", "OPIK_API_BASE_URL": "http://127.0.0.1:9/api"}),
    "drawio": ("npm", "drawio-mcp-server", "2.3.0", [], {"HOME": "{scratch}/home"}),
    "excalidraw": ("npm", "excalidraw-mcp", "1.0.0", [], {"HOME": "{scratch}/home"}),
    "pdf": ("npm", "@modelcontextprotocol/server-pdf", "2.0.4", ["--stdio"], {"HOME": "{scratch}/home"}),
}

# The fifteenth held-out set (bench/search/sets/set15/): in none of the sets above, outside
# AWS, all from npm (this machine's PyPI holds no unused MCP server package).
# Installed with --install-only and recorded with no network, as held-out 2 to 14
# (see bench/search/sets/set15/README.md, which lists the servers tried and left out).
SET15_SERVERS = {
    # 20.x: @angular/cli 22 exits at start on this machine's Node 20.
    "angular-cli": ("npm", "@angular/cli", "20.3.43", ["mcp"],
                    {"HOME": "{scratch}/home", "NG_CLI_ANALYTICS": "false"}),
    "gcloud": ("npm", "@google-cloud/gcloud-mcp", "0.5.3", [], {"HOME": "{scratch}/home"}),
    "gcs": ("npm", "@google-cloud/storage-mcp", "0.6.0", [],
            {"HOME": "{scratch}/home", "GOOGLE_CLOUD_PROJECT": "dummy"}),
    "browser-agent-infra": ("npm", "@agent-infra/mcp-server-browser", "1.2.29", [], {"HOME": "{scratch}/home"}),
    "commands": ("npm", "@agent-infra/mcp-server-commands", "1.2.18", [], {"HOME": "{scratch}/home"}),
    "canva": ("npm", "@canva/cli", "2.12.0", ["mcp"], {"HOME": "{scratch}/home"}),
    "jina": ("npm", "jina-mcp-tools", "1.2.3", [], {"HOME": "{scratch}/home", "JINA_API_KEY": "dummy"}),
    "graphql": ("npm", "mcp-graphql", "2.0.4", [],
                {"HOME": "{scratch}/home", "ENDPOINT": "http://127.0.0.1:9/graphql"}),
    "lighthouse": ("npm", "lighthouse-mcp", "0.1.17", [], {"HOME": "{scratch}/home"}),
    "npx-fetch": ("npm", "@tokenizin/mcp-npx-fetch", "1.0.0", [], {"HOME": "{scratch}/home"}),
    "qase": ("npm", "@qase/mcp-server", "2.7.0", [], {"HOME": "{scratch}/home", "QASE_API_TOKEN": "dummy"}),
    "gmail-shinzo": ("npm", "@shinzolabs/gmail-mcp", "1.7.4", [],
                     {"HOME": "{scratch}/home", "CLIENT_ID": "dummy", "CLIENT_SECRET": "dummy",
                      "REFRESH_TOKEN": "dummy"}),
}

# The sixteenth held-out set (bench/search/sets/set16/): in none of the sets above, outside
# AWS, all from npm (this machine's PyPI holds no unused MCP server package).
# Installed with --install-only and recorded with no network, as held-out 2 to 15
# (see bench/search/sets/set16/README.md, which lists the servers tried and left out).
SET16_SERVERS = {
    "vonage": ("npm", "@vonage/vonage-mcp-server-api-bindings", "1.4.0", [],
               {"HOME": "{scratch}/home", "VONAGE_API_KEY": "dummy", "VONAGE_API_SECRET": "dummy",
                "VONAGE_APPLICATION_ID": "dummy"}),
    "contentful": ("npm", "@ivotoby/contentful-management-mcp-server", "1.21.0", [],
                   {"HOME": "{scratch}/home", "CONTENTFUL_MANAGEMENT_ACCESS_TOKEN": "dummy"}),
    "chatwork": ("npm", "@chatwork/mcp-server", "0.0.4", [], {"HOME": "{scratch}/home", "CHATWORK_API_TOKEN": "dummy"}),
    "freee": ("npm", "freee-mcp", "0.35.2", [],
              {"HOME": "{scratch}/home", "FREEE_CLIENT_ID": "dummy", "FREEE_CLIENT_SECRET": "dummy"}),
    "claude-code-runner": ("npm", "@steipete/claude-code-mcp", "1.10.12", [], {"HOME": "{scratch}/home"}),
    "claude-code": ("npm", "@anthropic-ai/claude-code", "2.1.331", ["mcp", "serve"], {"HOME": "{scratch}/home"}),
    "leetcode": ("npm", "@jinzcdev/leetcode-mcp-server", "1.4.0", [], {"HOME": "{scratch}/home"}),
    "screenshot": ("npm", "@kazuph/mcp-screenshot", "1.0.4", [], {"HOME": "{scratch}/home"}),
    "figma-rest": ("npm", "mcp-figma", "0.1.1", [], {"HOME": "{scratch}/home", "FIGMA_API_KEY": "dummy"}),
    "mysql-f4": ("npm", "@f4ww4z/mcp-mysql-server", "0.1.0", [],
                 {"HOME": "{scratch}/home", "MYSQL_HOST": "127.0.0.1", "MYSQL_PORT": "9", "MYSQL_USER": "dummy",
                  "MYSQL_PASSWORD": "dummy", "MYSQL_DATABASE": "dummy"}),
    "redis-gongrzhe": ("npm", "@gongrzhe/server-redis-mcp", "1.0.0", ["redis://{redis}"], {"HOME": "{scratch}/home"}),
    "maps-code-assist": ("npm", "@googlemaps/code-assist-mcp", "0.2.1", [], {"HOME": "{scratch}/home"}),
}

# The seventeenth held-out set (bench/search/sets/set17/): in none of the sets above, outside
# AWS. Mostly from PyPI this time (pip reaches packages the local indexes lack; sets 14
# to 16 found no unused npm server left). Installed with --install-only and recorded
# with no network, as held-out 2 to 16 (see bench/search/sets/set17/README.md, which lists the
# servers tried and left out).
SET17_SERVERS = {
    "nixos": ("pypi", "mcp-nixos", "3.1.0", [], {"HOME": "{scratch}/home"}),
    "alchemy": ("pypi", "mcp-alchemy", "2026.10.15.202659", [],
                {"HOME": "{scratch}/home", "DB_URL": "sqlite:///{scratch}/alchemy.db"}),
    "serena": ("pypi", "serena-agent", "2.1.0", ["start-mcp-server", "--transport", "stdio", "--project", "{scratch}/repo"],
               {"HOME": "{scratch}/home"}),
    "text-editor": ("pypi", "mcp-text-editor", "1.0.2", [], {"HOME": "{scratch}/home"}),
    "shell": ("pypi", "mcp-shell-server", "1.1.14", [], {"HOME": "{scratch}/home", "ALLOW_COMMANDS": "ls,cat,echo"}),
    "meta-ads": ("pypi", "meta-ads-mcp", "1.0.128", [], {"HOME": "{scratch}/home", "META_ACCESS_TOKEN": "dummy"}),
    "scholarly": ("pypi", "mcp-scholarly", "0.1.0", [], {"HOME": "{scratch}/home"}),
    "pacman": ("pypi", "mcp-server-pacman", "0.2.0", [], {"HOME": "{scratch}/home"}),
    "skydeckai": ("pypi", "skydeckai-code", "0.1.41", [], {"HOME": "{scratch}/home"}),
    "kubectl": ("pypi", "kubectl-mcp-tool", "2.0.0", [], {"HOME": "{scratch}/home", "KUBECONFIG": "{scratch}/kubeconfig"}),
    "infisical": ("npm", "@infisical/mcp", "0.0.24", [],
                  {"HOME": "{scratch}/home", "INFISICAL_UNIVERSAL_AUTH_CLIENT_ID": "dummy",
                   "INFISICAL_UNIVERSAL_AUTH_CLIENT_SECRET": "dummy", "INFISICAL_HOST_URL": "http://127.0.0.1:9"}),
    "magicui": ("npm", "@magicuidesign/mcp", "2.0.0", [], {"HOME": "{scratch}/home"}),
}

# The eighteenth held-out set (bench/search/sets/set18/): in none of the sets above, outside
# AWS, mostly from PyPI (pip's default index, as held-out 17). Installed with
# --install-only and recorded with no network, as held-out 2 to 17 (see
# bench/search/sets/set18/README.md, which lists the servers tried and left out).
SET18_SERVERS = {
    "proxmox": ("pypi", "proxmox-mcp-plus", "0.6.7", [],
                {"HOME": "{scratch}/home", "PROXMOX_HOST": "127.0.0.1", "PROXMOX_PORT": "9", "PROXMOX_USER": "root@pam",
                 "PROXMOX_TOKEN_NAME": "dummy", "PROXMOX_TOKEN_VALUE": "dummy", "PROXMOX_VERIFY_SSL": "true"}),
    "x": ("pypi", "mcp-server-x", "0.3.0", [], {"HOME": "{scratch}/home"}),
    "uv": ("pypi", "uv-mcp", "0.3.0", [], {"HOME": "{scratch}/home"}),
    "redmine": ("pypi", "mcp-redmine", "2026.10.15.204909", [],
                {"HOME": "{scratch}/home", "REDMINE_URL": "http://127.0.0.1:9", "REDMINE_API_KEY": "dummy"}),
    "word": ("pypi", "office-word-mcp-server", "1.1.11", [], {"HOME": "{scratch}/home"}),
    "sec-edgar": ("pypi", "sec-edgar-mcp", "1.1.0", [],
                  {"HOME": "{scratch}/home", "SEC_EDGAR_USER_AGENT": "dummy dummy@example.com"}),
    "greptime": ("pypi", "greptimedb-mcp-server", "0.6.1", [],
                 {"HOME": "{scratch}/home", "GREPTIMEDB_HOST": "127.0.0.1", "GREPTIMEDB_PORT": "9",
                  "GREPTIMEDB_USER": "dummy", "GREPTIMEDB_PASSWORD": "dummy", "GREPTIMEDB_DATABASE": "public"}),
    "pypi-query": ("pypi", "pypi-query-mcp-server", "0.6.5", [], {"HOME": "{scratch}/home"}),
    "pubmed-simple": ("pypi", "mcp-simple-pubmed", "0.1.16", [], {"HOME": "{scratch}/home", "PUBMED_EMAIL": "dummy@example.com"}),
    "hn": ("pypi", "mcp-hn", "0.1.0", [], {"HOME": "{scratch}/home"}),
    "kagi": ("pypi", "kagimcp", "1.0.2", [], {"HOME": "{scratch}/home", "KAGI_API_KEY": "dummy"}),
    "basic-memory": ("pypi", "basic-memory", "0.24.1", ["mcp"], {"HOME": "{scratch}/home"}),
}

# The nineteenth held-out set (bench/search/sets/set19/): in none of the sets above, outside
# AWS, all from PyPI (pip's default index, as held-out 17 and 18). Installed with
# --install-only and recorded with no network, as held-out 2 to 18 (see
# bench/search/sets/set19/README.md, which lists the servers tried and left out).
SET19_SERVERS = {
    "couchbase": ("pypi", "couchbase-mcp-server", "1.0.1.post1", [],
                  {"HOME": "{scratch}/home", "CB_CONNECTION_STRING": "couchbase://127.0.0.1", "CB_USERNAME": "dummy",
                   "CB_PASSWORD": "dummy"}),
    "databricks": ("pypi", "databricks-mcp-server", "0.4.4", [],
                   {"HOME": "{scratch}/home", "DATABRICKS_HOST": "http://127.0.0.1:9", "DATABRICKS_TOKEN": "dummy"}),
    "freecad": ("pypi", "freecad-mcp", "0.1.28", [], {"HOME": "{scratch}/home"}),
    "jellyfin": ("pypi", "jellyfin-mcp", "1.0.1", [],
                 {"HOME": "{scratch}/home", "JELLYFIN_URL": "http://127.0.0.1:9", "JELLYFIN_API_KEY": "dummy"}),
    "mattermost": ("pypi", "mattermost-mcp", "1.0.1", [],
                   {"HOME": "{scratch}/home", "MATTERMOST_URL": "http://127.0.0.1:9", "MATTERMOST_TOKEN": "dummy"}),
    "mlflow": ("pypi", "mlflow-mcp", "0.4.1", [], {"HOME": "{scratch}/home", "MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}),
    "ollama": ("pypi", "mcp-ollama", "0.1.3", [], {"HOME": "{scratch}/home", "OLLAMA_HOST": "http://127.0.0.1:9"}),
    "toggl": ("pypi", "toggl-mcp", "0.1.8.2", [], {"HOME": "{scratch}/home", "TOGGL_API_TOKEN": "dummy", "TOGGL_WORKSPACE_ID": "1"}),
    "servicenow": ("pypi", "iflow-mcp_mcp-server-servicenow", "0.1.1", [],
                   {"HOME": "{scratch}/home", "SERVICENOW_INSTANCE_URL": "http://127.0.0.1:9", "SERVICENOW_USERNAME": "dummy",
                    "SERVICENOW_PASSWORD": "dummy"}),
    "ansible": ("pypi", "ansible-mcp", "1.0.1", ["serve", "--stdio"], {"HOME": "{scratch}/home"}),
    "gitea": ("pypi", "gitea-mcp", "0.5.1", [], {"HOME": "{scratch}/home", "GITEA_URL": "http://127.0.0.1:9", "GITEA_TOKEN": "dummy"}),
    "couchbase-guru": ("pypi", "couchbase-guru", "0.1.0", [], {"HOME": "{scratch}/home", "CB_AGENT_BASE_URL": "http://127.0.0.1:9"}),
}

# The twentieth held-out set (bench/search/sets/set20/): in none of the sets above, outside
# AWS, all from PyPI (pip's default index, as held-out 17 to 19). Installed with
# --install-only and recorded with no network, as held-out 2 to 19 (see
# bench/search/sets/set20/README.md, which lists the servers tried and left out).
SET20_SERVERS = {
    "excel-py": ("pypi", "excel-mcp-server", "2.2.2", ["stdio"], {"HOME": "{scratch}/home"}),
    "langfuse": ("pypi", "langfuse-mcp", "0.14.0", [],
                 {"HOME": "{scratch}/home", "LANGFUSE_PUBLIC_KEY": "pk-dummy", "LANGFUSE_SECRET_KEY": "sk-dummy",
                  "LANGFUSE_HOST": "http://127.0.0.1:9"}),
    "gsuite": ("pypi", "mcp-gsuite", "0.4.1",
               ["--gauth-file", "{scratch}/gauth.json", "--accounts-file", "{scratch}/accounts.json",
                "--credentials-dir", "{scratch}/files"], {"HOME": "{scratch}/home"}),
    "neo4j-aura": ("pypi", "mcp-neo4j-aura-manager", "0.4.8", [],
                   {"HOME": "{scratch}/home", "NEO4J_AURA_CLIENT_ID": "dummy", "NEO4J_AURA_CLIENT_SECRET": "dummy"}),
    "markitdown": ("pypi", "markitdown-mcp", "0.0.1a8", [], {"HOME": "{scratch}/home"}),
    "timeplus": ("pypi", "mcp-timeplus", "0.1.6", [],
                 {"HOME": "{scratch}/home", "TIMEPLUS_HOST": "127.0.0.1", "TIMEPLUS_PORT": "9", "TIMEPLUS_USER": "dummy",
                  "TIMEPLUS_PASSWORD": "dummy"}),
    "paper-search": ("pypi", "paper-search-mcp", "0.1.4", [], {"HOME": "{scratch}/home"}),
    "code-index": ("pypi", "code-index-mcp", "2.17.1", [], {"HOME": "{scratch}/home"}),
    "simple-time": ("pypi", "mcp-simple-timeserver", "3.3.2", [], {"HOME": "{scratch}/home"}),
    "openai-assistant": ("pypi", "mcp-simple-openai-assistant", "0.4.1", [], {"HOME": "{scratch}/home", "OPENAI_API_KEY": "sk-dummy"}),
    "cli": ("pypi", "cli-mcp-server", "0.2.5", [],
            {"HOME": "{scratch}/home", "ALLOWED_DIR": "{scratch}/repo", "ALLOWED_COMMANDS": "ls,cat,pwd",
             "ALLOWED_FLAGS": "-l,-a"}),
    "simple-arxiv": ("pypi", "mcp-simple-arxiv", "0.6.0", [], {"HOME": "{scratch}/home"}),
}

# The twenty-first held-out set (bench/search/sets/set21/): in none of the sets above, outside
# AWS, all from PyPI (pip's default index, as held-out 17 to 20). Installed with
# --install-only and recorded with no network, as held-out 2 to 20 (see
# bench/search/sets/set21/README.md, which lists the servers tried and left out).
SET21_SERVERS = {
    "canvas": ("pypi", "canvas-local-mcp", "0.1.3", [],
               {"HOME": "{scratch}/home", "CANVAS_TOKEN": "dummy", "CANVAS_BASE_URL": "http://127.0.0.1:9"}),
    "adx": ("pypi", "adx-mcp-server", "1.1.0", [],
            {"HOME": "{scratch}/home", "ADX_CLUSTER_URL": "http://127.0.0.1:9", "ADX_DATABASE": "dummy",
             "AZURE_TENANT_ID": "dummy", "AZURE_CLIENT_ID": "dummy", "AZURE_CLIENT_SECRET": "dummy"}),
    "things": ("pypi", "things-mcp", "0.8.2", [], {"HOME": "{scratch}/home"}),
    "zotero-api": ("pypi", "zotero-api-mcp", "0.0.4", ["serve"],
                   {"HOME": "{scratch}/home", "ZOTERO_API_KEY": "dummy", "ZOTERO_LIBRARY_ID": "1",
                    "ZOTERO_LIBRARY_TYPE": "user"}),
    "vectara": ("pypi", "vectara-mcp", "0.2.1", ["--transport", "stdio"], {"HOME": "{scratch}/home", "VECTARA_API_KEY": "dummy"}),
    "kanbantool": ("pypi", "kanbantool-mcp", "0.8.3", [],
                   {"HOME": "{scratch}/home", "KANBANTOOL_DOMAIN": "dummy", "KANBANTOOL_API_TOKEN": "dummy"}),
    "ynab": ("pypi", "py-ynab-mcp", "0.3.0", [], {"HOME": "{scratch}/home", "YNAB_ACCESS_TOKEN": "dummy"}),
    "pihole": ("pypi", "iflow-mcp_sbarbett-pihole-mcp-server", "0.2.4", [],
               {"HOME": "{scratch}/home", "PIHOLE_URL": "http://127.0.0.1:9/", "PIHOLE_PASSWORD": "dummy"}),
    "nativ": ("pypi", "nativ-mcp", "0.5.0", [], {"HOME": "{scratch}/home", "NATIV_API_KEY": "dummy"}),
    "hetzner": ("pypi", "mcp-hetzner", "0.3.0", [], {"HOME": "{scratch}/home", "HCLOUD_TOKEN": "dummy"}),
    "chess": ("pypi", "mcp-chess", "0.1.9", [], {"HOME": "{scratch}/home"}),
    "fda": ("pypi", "fda-mcp", "0.2.2", [], {"HOME": "{scratch}/home"}),
}

# The twenty-second held-out set (bench/search/sets/set22/): in none of the sets above, outside
# AWS, all from PyPI (pip's default index, as held-out 17 to 21). Installed with
# --install-only and recorded with no network, as held-out 2 to 21 (see
# bench/search/sets/set22/README.md, which lists the servers tried and left out).
SET22_SERVERS = {
    "ghost": ("pypi", "ghost-cms-mcp", "0.1.1", [],
              {"HOME": "{scratch}/home", "GHOST_URL": "http://127.0.0.1:9",
               "GHOST_ADMIN_KEY": "0123456789abcdef01234567:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}),
    "oura": ("pypi", "oura-mcp", "0.1.0", [], {"HOME": "{scratch}/home", "OURA_ACCESS_TOKEN": "dummy"}),
    "garmin": ("pypi", "mcp-garmin-connect", "0.2.0", ["serve"],
               {"HOME": "{scratch}/home", "GARMIN_EMAIL": "dummy@example.com", "GARMIN_PASSWORD": "dummy"}),
    "vikunja": ("pypi", "vikunja-python", "0.1.2", [],
                {"HOME": "{scratch}/home", "VIKUNJA_URL": "http://127.0.0.1:9/api/v1", "VIKUNJA_API_TOKEN": "dummy"}),
    "hue": ("pypi", "hue-go-mcp", "0.3.1", [],
            {"HOME": "{scratch}/home", "MQTT_HOST": "127.0.0.1", "MQTT_PORT": "9", "Z2M_DEVICE": "hue_go"}),
    "mqtt": ("pypi", "mqtt-mcp-server", "1.0.7", ["-m", "mqtt_mcp.server"],
             {"HOME": "{scratch}/home", "MQTT_HOST": "127.0.0.1", "MQTT_PORT": "9", "MQTT_USERNAME": "dummy",
              "MQTT_PASSWORD": "dummy"}),
    "paperless": ("pypi", "pvliesdonk-paperless-mcp", "3.0.0", ["serve"],
                  {"HOME": "{scratch}/home", "PAPERLESS_MCP_PAPERLESS_URL": "http://127.0.0.1:9",
                   "PAPERLESS_MCP_API_TOKEN": "dummy"}),
    "yfinance": ("pypi", "yfinance-market-mcp", "0.3.3", [], {"HOME": "{scratch}/home"}),
    "woocommerce": ("pypi", "mcp-woocommerce", "0.1.0", [],
                    {"HOME": "{scratch}/home", "WOOCOMMERCE_URL": "http://127.0.0.1:9", "WOOCOMMERCE_KEY": "ck_dummy",
                     "WOOCOMMERCE_SECRET": "cs_dummy"}),
    "uptime-kuma": ("pypi", "uptime-kuma-mcp-server", "0.1.15", [],
                    {"HOME": "{scratch}/home", "KUMA_URL": "http://127.0.0.1:9", "KUMA_USERNAME": "dummy",
                     "KUMA_PASSWORD": "dummy"}),
    "plausible": ("pypi", "plausible-mcp", "0.1.2", [],
                  {"HOME": "{scratch}/home", "PLAUSIBLE_API_KEY": "dummy", "PLAUSIBLE_BASE_URL": "http://127.0.0.1:9",
                   "DO_NOT_TRACK": "1"}),
    "matomo": ("pypi", "matomo-mcp", "1.0.0a1", ["-m", "matomo_mcp"],
               {"HOME": "{scratch}/home", "MATOMO_URL": "http://127.0.0.1:9", "MATOMO_TOKEN": "dummy"}),
}

# Every server any set knows, for install/start (the names do not overlap).
ALL_SERVERS = dict(SERVERS, **SET01_SERVERS, **SET02_SERVERS, **SET03_SERVERS, **SET04_SERVERS,
                   **SET05_SERVERS, **SET06_SERVERS, **SET07_SERVERS, **SET08_SERVERS,
                   **SET09_SERVERS, **SET10_SERVERS, **SET11_SERVERS, **SET12_SERVERS,
                   **SET13_SERVERS, **SET14_SERVERS, **SET15_SERVERS,
                   **SET16_SERVERS, **SET17_SERVERS, **SET18_SERVERS,
                   **SET19_SERVERS, **SET20_SERVERS, **SET21_SERVERS,
                   **SET22_SERVERS)

# --set name -> (its servers, where their catalogs are written).
SETS = {
    "set00": (SERVERS, CATALOGS),
    "set01": (SET01_SERVERS, SET01_CATALOGS),
    "set02": (SET02_SERVERS, SET02_CATALOGS),
    "set03": (SET03_SERVERS, SET03_CATALOGS),
    "set04": (SET04_SERVERS, SET04_CATALOGS),
    "set05": (SET05_SERVERS, SET05_CATALOGS),
    "set06": (SET06_SERVERS, SET06_CATALOGS),
    "set07": (SET07_SERVERS, SET07_CATALOGS),
    "set08": (SET08_SERVERS, SET08_CATALOGS),
    "set09": (SET09_SERVERS, SET09_CATALOGS),
    "set10": (SET10_SERVERS, SET10_CATALOGS),
    "set11": (SET11_SERVERS, SET11_CATALOGS),
    "set12": (SET12_SERVERS, SET12_CATALOGS),
    "set13": (SET13_SERVERS, SET13_CATALOGS),
    "set14": (SET14_SERVERS, SET14_CATALOGS),
    "set15": (SET15_SERVERS, SET15_CATALOGS),
    "set16": (SET16_SERVERS, SET16_CATALOGS),
    "set17": (SET17_SERVERS, SET17_CATALOGS),
    "set18": (SET18_SERVERS, SET18_CATALOGS),
    "set19": (SET19_SERVERS, SET19_CATALOGS),
    "set20": (SET20_SERVERS, SET20_CATALOGS),
    "set21": (SET21_SERVERS, SET21_CATALOGS),
    "set22": (SET22_SERVERS, SET22_CATALOGS),
}

# npm packages whose executable name differs from "mcp-" + the package's last path part.
NPM_BIN = {
    "@infisical/mcp": "../@infisical/mcp/dist/index.js",
    "@magicuidesign/mcp": "../@magicuidesign/mcp/dist/server.js",
    "@vonage/vonage-mcp-server-api-bindings": "vonage-mcp-server-api-bindings",
    "@ivotoby/contentful-management-mcp-server": "contentful-mcp",
    "@chatwork/mcp-server": "../@chatwork/mcp-server/dist/index.js",
    "freee-mcp": "freee-mcp",
    "@steipete/claude-code-mcp": "claude-code-mcp",
    "@anthropic-ai/claude-code": "claude",
    "@jinzcdev/leetcode-mcp-server": "leetcode-mcp-server",
    "@f4ww4z/mcp-mysql-server": "../@f4ww4z/mcp-mysql-server/build/index.js",
    "@gongrzhe/server-redis-mcp": "../@gongrzhe/server-redis-mcp/build/index.js",
    "@googlemaps/code-assist-mcp": "code-assist-mcp",
    "@kazuph/mcp-screenshot": "mcp-screenshot",
    "mcp-figma": "mcp-figma",
    "@angular/cli": "ng",
    "@google-cloud/gcloud-mcp": "gcloud-mcp",
    "@google-cloud/storage-mcp": "storage-mcp",
    "@agent-infra/mcp-server-browser": "mcp-server-browser",
    "@agent-infra/mcp-server-commands": "mcp-server-commands",
    "@canva/cli": "canva",
    "jina-mcp-tools": "jina-mcp-tools",
    "mcp-graphql": "mcp-graphql",
    "lighthouse-mcp": "lighthouse-mcp",
    "@qase/mcp-server": "qase-mcp-server",
    "@tokenizin/mcp-npx-fetch": "mcp-npx-fetch",
    "@shinzolabs/gmail-mcp": "gmail-mcp",
    "task-master-ai": "task-master-ai",
    "@azure/mcp": "azmcp",
    "@google-cloud/cloud-run-mcp": "cloud-run-mcp",
    "convex": "convex",
    "@eslint/mcp": "../@eslint/mcp/src/mcp-cli.js",
    "dataforseo-mcp-server": "dataforseo-mcp-server",
    "mcp-shrimp-task-manager": "mcp-shrimp-task-manager",
    "mcp-server-gsc": "mcp-server-gsc",
    "xcodebuildmcp": "xcodebuildmcp",
    "opik-mcp": "opik-mcp",
    "drawio-mcp-server": "drawio-mcp-server",
    "excalidraw-mcp": "excalidraw-mcp",
    "@modelcontextprotocol/server-pdf": "mcp-pdf-server",
    "@microsoft/clarity-mcp-server": "clarity-mcp-server",
    "kubernetes-mcp-server": "kubernetes-mcp-server",
    "@executeautomation/playwright-mcp-server": "playwright-mcp-server",
    "@henkey/postgres-mcp-server": "postgres-mcp",
    "@codacy/codacy-mcp": "codacy-mcp-server",
    "next-devtools-mcp": "next-devtools-mcp",
    "omnifocus-mcp": "omnifocus-mcp",
    "prisma": "prisma",
    "@aashari/mcp-server-atlassian-jira": "mcp-atlassian-jira",
    "@baidumap/mcp-server-baidu-map": "mcp-server-baidu-map",
    "@coding-solo/godot-mcp": "godot-mcp",
    "@llmindset/mcp-miro": "mcp-miro",
    "@gannonh/firebase-mcp": "firebase-mcp",
    "@r-huijts/strava-mcp-server": "strava-mcp-server",
    "@datastax/astra-db-mcp": "astra-db-mcp",
    "@modelcontextprotocol/server-aws-kb-retrieval": "mcp-server-aws-kb-retrieval",
    "tavily-mcp": "tavily-mcp",
    "exa-mcp-server": "exa-mcp-server",
    "@upstash/context7-mcp": "context7-mcp",
    "firecrawl-mcp": "firecrawl-mcp",
    "@kimtaeyoon83/mcp-server-youtube-transcript": "mcp-server-youtube-transcript",
    "airtable-mcp-server": "airtable-mcp-server",
    "@notionhq/notion-mcp-server": "notion-mcp-server",
    "@playwright/mcp": "playwright-mcp",
    "mcp-server-kubernetes": "mcp-server-kubernetes",
    "@browserbasehq/mcp-server-browserbase": "mcp-server-browserbase",
    "@stripe/mcp": "mcp",
    "linear-mcp-server": "linear-mcp-server",
    "@circleci/mcp-server-circleci": "mcp-server-circleci",
    "@winor30/mcp-server-datadog": "mcp-server-datadog",
    "@elastic/mcp-server-elasticsearch": "mcp-server-elasticsearch",
    "@negokaz/excel-mcp-server": "excel-mcp-server",
    "figma-developer-mcp": "figma-developer-mcp",
    "@openbnb/mcp-server-airbnb": "mcp-server-airbnb",
    "mcp-discord": "mcp-discord",
    "@hubspot/mcp-server": "mcp-hubspot",
    "@shopify/dev-mcp": "shopify-dev-mcp",
    "mongodb-mcp-server": "mongodb-mcp-server",
    "@roychri/mcp-server-asana": "mcp-server-asana",
    "@gongrzhe/server-gmail-autoauth-mcp": "gmail-mcp",
    "@cocal/google-calendar-mcp": "google-calendar-mcp",
    "@tsmztech/mcp-server-salesforce": "salesforce-connector",
    "@netlify/mcp": "netlify-mcp",
    "@mapbox/mcp-server": "mcp-server",
    "@pinecone-database/mcp": "pinecone-mcp",
    "@shortcut/mcp": "mcp-server-shortcut",
    "@mondaydotcomorg/monday-api-mcp": "mcp-server-monday-api",
    "@sentry/mcp-server": "sentry-mcp",
    "@line/line-bot-mcp-server": "line-bot-mcp-server",
    "@launchdarkly/mcp-server": "mcp",
    "@browserstack/mcp-server": "browserstack-mcp-server",
    "chrome-devtools-mcp": "chrome-devtools-mcp",
    "@makeplane/plane-mcp-server": "plane-mcp-server",
    "deepl-mcp-server": "deepl-mcp-server",
    "argocd-mcp": "argocd-mcp",
    "sonarqube-mcp-server": "sonarqube-mcp-server",
    "@rollbar/mcp-server": "rollbar-mcp-server",
    "@aashari/mcp-server-atlassian-bitbucket": "mcp-atlassian-bitbucket",
    "@perplexity-ai/mcp-server": "perplexity-mcp",
    "mcp-searxng": "mcp-searxng",
    "@wonderwhy-er/desktop-commander": "desktop-commander",
    "@paddle/paddle-mcp": "paddle",
    "@digitalocean/mcp": "mcp",
    "@llmindset/hf-mcp-server": "hf-mcp-server",
    "@translated/lara-mcp": "lara-mcp",
    "@sylphx/pdf-reader-mcp": "pdf-reader-mcp",
    "@agentdeskai/browser-tools-mcp": "browser-tools-mcp",
    "mcp-server-code-runner": "mcp-server-code-runner",
    "@executeautomation/database-server": "ea-database-server",
    "@cyanheads/git-mcp-server": "git-mcp-server",
    "@browsermcp/mcp": "mcp-server-browsermcp",
    "square-mcp-server": "square-mcp-server",
    # Bright Data's executable is also named "mcp" (as DigitalOcean's and LaunchDarkly's are, and
    # one npm prefix holds one .bin/mcp), so it is started from its own script instead.
    "@brightdata/mcp": "../@brightdata/mcp/server.js",
    "@softeria/ms-365-mcp-server": "ms-365-mcp-server",
    "@antv/mcp-server-chart": "mcp-server-chart",
    "@cyanheads/pubmed-mcp-server": "pubmed-mcp-server",
    "@amap/amap-maps-mcp-server": "mcp-amap",
    "@mobilenext/mobile-mcp": "mcp-server-mobile",
    "@jpisnice/shadcn-ui-mcp-server": "shadcn-mcp",
    "@vapi-ai/mcp-server": "mcp-server",
    "@google-cloud/observability-mcp": "observability-mcp",
    "@gleanwork/local-mcp-server": "local-mcp-server",
    # Currents' executable is named "mcp", as DigitalOcean's, LaunchDarkly's and Bright Data's
    # are: record held-out 9 from a scratch dir of its own.
    "@currents/mcp": "mcp",
    "webflow-mcp-server": "webflow-mcp-server",
    "@tiberriver256/mcp-server-azure-devops": "mcp-server-azure-devops",
    "@opentofu/opentofu-mcp-server": "opentofu-mcp-server",
    "@kazuph/mcp-taskmanager": "mcp-taskmanager",
    "mcp-turso-cloud": "mcp-turso-cloud",
    "youtube-data-mcp-server": "youtube-data-mcp-server",
    "influxdb-mcp-server": "influxdb-mcp-server",
    "nx-mcp": "nx-mcp",
    # Cloudinary's executable is also named "mcp" (as MUI's is; one npm prefix holds one .bin/mcp):
    # started from its own script.
    "@cloudinary/asset-management-mcp": "../@cloudinary/asset-management-mcp/bin/mcp-server.js",
    "n8n-mcp": "n8n-mcp",
    "@mastra/mcp-docs-server": "mcp-docs-server",
    # MUI's executable is named "mcp" too: started from its own script.
    "@mui/mcp": "../@mui/mcp/stdio.js",
}

# PyPI packages whose executable name is not the package name.
PYPI_BIN = {
    "serena-agent": "serena",
    "kubectl-mcp-tool": "kubectl-mcp",
    "mysql-mcp-server": "mysql_mcp_server",
    "microsoft_sql_server_mcp": "mssql_mcp_server",
    "office-powerpoint-mcp-server": "ppt_mcp_server",
    "awslabs.ecs-mcp-server": "ecs-mcp-server",
    "mcp-weather-server": "mcp_weather_server",
    "biomcp-python": "biomcp",
    "meilisearch-mcp": "meilisearch-mcp",
    "minimax-mcp": "minimax-mcp",
    "office-word-mcp-server": "word_mcp_server",
    "greptimedb-mcp-server": "greptimedb-mcp-server",
    "iflow-mcp_mcp-server-servicenow": "mcp-server-servicenow",
    "iflow-mcp_sbarbett-pihole-mcp-server": "pihole-mcp-server",
    "vikunja-python": "vikunja-mcp",
    "pvliesdonk-paperless-mcp": "paperless-mcp",
    # Their console scripts do not start the server (mqtt-mcp-server's never awaits
    # its main coroutine; matomo-mcp has none): started as modules of their venv's Python.
    "mqtt-mcp-server": "python",
    "matomo-mcp": "python",
}

# Extra requirements of PyPI servers published before MCP SDK 2.0 changed the
# API they use (each PyPI server gets a venv of its own, so pins don't clash).
PYPI_EXTRA = {"uv-mcp": ["mcp<2"], "mcp-hn": ["mcp<2"], "mcp-simple-pubmed": ["pydantic-settings", "mcp<2"], "mcp-text-editor": ["mcp<2"], "mcp-server-pacman": ["mcp<2"], "skydeckai-code": ["mcp<2"],
              "mcp-scholarly": ["bibtexparser<2", "mcp<2"], "mcp-server-sqlite": ["mcp<2"], "mcp-server-sentry": ["mcp<2"], "mcp-google-sheets": ["mcp<2"],
              "mcp-server-duckdb": ["mcp<2"], "microsoft_sql_server_mcp": ["mcp<2"],
              "office-powerpoint-mcp-server": ["mcp<2"], "mcp-server-tree-sitter": ["mcp<2"],
              "mcp-server-reddit": ["mcp<2"], "serper-mcp-server": ["mcp<2"], "mcp-weather-server": ["mcp<2"],
              "ida-pro-mcp": ["mcp<2"], "databricks-mcp-server": ["mcp<2"], "mcp-ollama": ["mcp<2"],
              "toggl-mcp": ["mcp<2"], "mattermost-mcp": ["mattermost-mcp[mcp]"],
              "iflow-mcp_mcp-server-servicenow": ["mcp<2"], "ansible-mcp": ["mcp<2"],
              "mcp-gsuite": ["mcp<2"], "mcp-timeplus": ["mcp<2"], "paper-search-mcp": ["mcp<2"], "cli-mcp-server": ["mcp<2"],
              "vectara-mcp": ["mcp<2"], "mcp-hetzner": ["mcp<2"], "iflow-mcp_sbarbett-pihole-mcp-server": ["mcp<2"],
              "mcp-chess": ["mcp<2"], "fda-mcp": ["mcp<2"], "ghost-cms-mcp": ["mcp<2"], "oura-mcp": ["mcp<2"],
              "vikunja-python": ["mcp<2"], "mqtt-mcp-server": ["mcp<2"], "yfinance-market-mcp": ["mcp<2"],
              "mcp-woocommerce": ["mcp<2"], "uptime-kuma-mcp-server": ["mcp<2"], "matomo-mcp": ["mcp<2"]}

# PyPI servers that require a newer Python than the one running the recorder: their
# venv is made with this interpreter instead (pyenv's, on this machine).
PYPI_PYTHON = {"mcp-hn": "python3.12", "kagimcp": "python3.12", "basic-memory": "python3.12", "freecad-mcp": "python3.12",
               "ansible-mcp": "python3.12", "mcp-gsuite": "python3.13", "mcp-timeplus": "python3.13",
               "excel-mcp-server": "python3.12", "langfuse-mcp": "python3.12", "mcp-neo4j-aura-manager": "python3.12",
               "markitdown-mcp": "python3.12", "paper-search-mcp": "python3.12", "code-index-mcp": "python3.12",
               "mcp-simple-timeserver": "python3.12", "mcp-simple-openai-assistant": "python3.12",
               "cli-mcp-server": "python3.12", "mcp-simple-arxiv": "python3.12",
               "canvas-local-mcp": "python3.12", "adx-mcp-server": "python3.12", "things-mcp": "python3.12",
               "zotero-api-mcp": "python3.12", "vectara-mcp": "python3.12", "kanbantool-mcp": "python3.12",
               "py-ynab-mcp": "python3.12", "iflow-mcp_sbarbett-pihole-mcp-server": "python3.13",
               "nativ-mcp": "python3.12", "mcp-hetzner": "python3.12", "mcp-chess": "python3.12",
               "fda-mcp": "python3.12", "ghost-cms-mcp": "python3.12", "oura-mcp": "python3.12",
               "mcp-garmin-connect": "python3.12", "vikunja-python": "python3.13", "hue-go-mcp": "python3.12",
               "mqtt-mcp-server": "python3.12", "pvliesdonk-paperless-mcp": "python3.12",
               "yfinance-market-mcp": "python3.12", "mcp-woocommerce": "python3.12",
               "uptime-kuma-mcp-server": "python3.12", "plausible-mcp": "python3.12", "matomo-mcp": "python3.12"}


class FakeRedis:
    """A loopback stand-in that answers every Redis command with +OK.

    server-redis connects to Redis before it serves MCP at all; tools/list
    needs nothing more from Redis than a connection that accepts its
    handshake commands.
    """

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.address = "%s:%d" % self.sock.getsockname()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                count, buf = _split_commands(buf)
                conn.sendall(b"+OK\r\n" * count)

    def close(self):
        self.sock.close()


def _split_commands(buf):
    """(number of complete RESP commands in buf, the incomplete rest)."""
    count = 0
    while True:
        pos = _parse_command(buf)
        if pos is None:
            return count, buf
        count += 1
        buf = buf[pos:]


def _parse_command(buf):
    # A client sends commands as arrays of bulk strings: *N, then N x ($len, data).
    end = buf.find(b"\r\n")
    if end < 0 or not buf.startswith(b"*"):
        return None
    pos = end + 2
    for _ in range(int(buf[1:end])):
        end = buf.find(b"\r\n", pos)
        if end < 0:
            return None
        pos = end + 2 + int(buf[pos + 1:end]) + 2
        if pos > len(buf):
            return None
    return pos


def install(scratch, names):
    npm = [f"{ALL_SERVERS[n][1]}@{ALL_SERVERS[n][2]}" for n in names if ALL_SERVERS[n][0] == "npm"]
    if npm:
        os.makedirs(os.path.join(scratch, "npm"), exist_ok=True)
        # Puppeteer would otherwise download a browser build; tools/list needs none.
        env = dict(os.environ, PUPPETEER_SKIP_DOWNLOAD="1", PUPPETEER_SKIP_CHROMIUM_DOWNLOAD="1",
                   PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
        subprocess.run(["npm", "install", "--prefix", os.path.join(scratch, "npm"), "--no-audit", "--no-fund",
                        "--loglevel=error"] + npm, check=True, env=env)
    for name in names:
        registry, package, version, _, _ = ALL_SERVERS[name]
        if registry != "pypi":
            continue
        venv = os.path.join(scratch, "venv-" + name)
        if not os.path.exists(os.path.join(venv, "bin", "python")):
            subprocess.run([PYPI_PYTHON.get(package, sys.executable), "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", f"{package}=={version}"] + PYPI_EXTRA.get(package, []),
                       check=True)


def prepare(scratch):
    """Files some servers insist on before they start."""
    os.makedirs(os.path.join(scratch, "files"), exist_ok=True)
    repo = os.path.join(scratch, "repo")
    if not os.path.isdir(os.path.join(repo, ".git")):
        os.makedirs(repo, exist_ok=True)
        subprocess.run(["git", "init", "-q", repo], check=True)
    # mcp-server-kubernetes loads a kubeconfig at start-up; this one points at a closed local port.
    with open(os.path.join(scratch, "kubeconfig"), "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: dummy\n"
                "clusters:\n- name: dummy\n  cluster:\n    server: https://127.0.0.1:9\n"
                "contexts:\n- name: dummy\n  context:\n    cluster: dummy\n    user: dummy\n"
                "users:\n- name: dummy\n  user:\n    token: dummy\n")
    # gdrive reads saved OAuth tokens at start-up and only uses them on a call.
    with open(os.path.join(scratch, "gdrive-credentials.json"), "w") as f:
        json.dump({"access_token": "dummy", "refresh_token": "dummy", "token_type": "Bearer"}, f)
    with open(os.path.join(scratch, "gdrive-oauth.json"), "w") as f:
        json.dump({"installed": {"client_id": "dummy", "client_secret": "dummy",
                                 "redirect_uris": ["http://127.0.0.1"]}}, f)
    # The Gmail and Google Calendar servers read an OAuth client file at start-up (Gmail from
    # $HOME/.gmail-mcp) and only use it when a tool is called.
    home = os.path.join(scratch, "home")
    os.makedirs(os.path.join(home, ".gmail-mcp"), exist_ok=True)
    oauth_client = {"installed": {"client_id": "dummy", "client_secret": "dummy",
                                  "redirect_uris": ["http://127.0.0.1"]}}
    for path in (os.path.join(home, ".gmail-mcp", "gcp-oauth.keys.json"), os.path.join(home, "gcp-oauth.keys.json")):
        with open(path, "w") as f:
            json.dump(oauth_client, f)
    # mcp-gsuite reads its OAuth client file and account list at start-up and only uses them on a call.
    with open(os.path.join(scratch, "gauth.json"), "w") as f:
        json.dump({"web": {"client_id": "dummy", "client_secret": "dummy", "redirect_uris": ["http://127.0.0.1:9/code"],
                           "auth_uri": "http://127.0.0.1:9/auth", "token_uri": "http://127.0.0.1:9/token"}}, f)
    with open(os.path.join(scratch, "accounts.json"), "w") as f:
        json.dump({"accounts": [{"email": "dummy@example.com", "account_type": "personal", "extra_info": "dummy"}]}, f)
    # The SNS/SQS server opens the AWS profile "default" at start-up; this one holds only a region.
    with open(os.path.join(scratch, "aws-config"), "w") as f:
        f.write("[default]\nregion = us-east-1\n")
    # mcp-google-sheets builds service-account credentials at start-up, which needs a
    # well-formed private key (a fresh throwaway one; its token URI is a closed local port).
    account = os.path.join(scratch, "service-account.json")
    if not os.path.exists(account):
        key = subprocess.run(["openssl", "genrsa", "2048"], check=True, capture_output=True, text=True).stdout
        with open(account, "w") as f:
            json.dump({"type": "service_account", "project_id": "dummy", "private_key_id": "dummy",
                       "private_key": key, "client_email": "dummy@dummy.iam.gserviceaccount.com",
                       "client_id": "1", "token_uri": "http://127.0.0.1:9/token"}, f)


def command_for(scratch, name, redis):
    registry, package, _, args, env = ALL_SERVERS[name]
    if registry == "npm":
        exe = NPM_BIN.get(package, "mcp-" + package.rsplit("/", 1)[-1])
        exe = os.path.join(scratch, "npm", "node_modules", ".bin", exe)
    else:
        exe = os.path.join(scratch, "venv-" + name, "bin", PYPI_BIN.get(package, package))
    fill = lambda s: s.replace("{scratch}", scratch).replace("{redis}", redis)  # noqa: E731
    return exe, [fill(a) for a in args], {k: fill(v) for k, v in env.items()}


def record(scratch, name, timeout, redis):
    exe, args, env = command_for(scratch, name, redis)
    if not os.path.exists(exe):
        raise RuntimeError(f"{exe} is not installed (run with --install)")
    config = ServerConfig(name=name, type="stdio", source="record_catalogs", command=exe, args=args, env=env,
                          timeout=timeout)
    session = open_session(config)
    try:
        tools = session.list_tools()
    finally:
        session.close()
    registry, package, version, _, _ = ALL_SERVERS[name]
    return {
        "server": name,
        "package": f"{package}@{version}",
        "registry": registry,
        "recorded": datetime.date.today().isoformat(),
        "tools": tools,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="servers to record (default: all of the --set)")
    parser.add_argument("--set", choices=sorted(SETS), default="set00",
                        help="the evaluation set whose servers to record into its catalogs/ (bench/search/sets/<set>/catalogs)")
    parser.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "toolscript-eval-servers"),
                        help="where the servers are installed (outside the checkout)")
    parser.add_argument("--install", action="store_true", help="npm/pip install the servers into --scratch first")
    parser.add_argument("--install-only", action="store_true",
                        help="install the servers and stop, so that recording can run with no network"
                             " (held-out 2 to 19)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each server")
    args = parser.parse_args(argv)
    servers, catalogs = SETS[args.set]
    names = args.names or list(servers)
    unknown = [n for n in names if n not in servers]
    if unknown:
        parser.error(f"unknown server(s) in --set {args.set}: {', '.join(unknown)}; known: {', '.join(servers)}")
    scratch = os.path.abspath(args.scratch)
    os.makedirs(scratch, exist_ok=True)
    if args.install or args.install_only:
        install(scratch, names)
    if args.install_only:
        return 0
    prepare(scratch)
    os.makedirs(catalogs, exist_ok=True)
    redis = FakeRedis()
    failed = []
    for name in names:
        try:
            catalog = record(scratch, name, args.timeout, redis.address)
        except Exception as exc:  # one broken server must not stop the others
            failed.append(name)
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            continue
        with open(os.path.join(catalogs, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(catalog, f, indent=1, ensure_ascii=False, sort_keys=False)
            f.write("\n")
        print(f"{name}: {len(catalog['tools'])} tools", file=sys.stderr)
    redis.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
