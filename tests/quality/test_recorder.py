"""bench/search/record_catalogs.py: how each evaluation set's servers are installed and started to be recorded.

Every server starts from the recorder's scratch install with placeholder credentials and closed local
ports, never a real backend; the checks are per set, as the sets were recorded.
"""

import json
import os

import pytest

from search_sets import load_recorder


def npm_bin(scratch, executable):
    """Where the recorder's scratch install puts an npm server's executable."""
    return os.path.join(scratch, "npm", "node_modules", ".bin", executable)


def venv_bin(scratch, server, executable):
    """Where the recorder's scratch install puts a PyPI server's executable (one venv per server)."""
    return os.path.join(scratch, "venv-" + server, "bin", executable)


@pytest.fixture
def start_command(tmp_path):
    """server -> the recorder's (executable, args, env) to start it from a scratch install in tmp_path."""
    recorder = load_recorder()
    return lambda server: recorder.command_for(str(tmp_path), server, "127.0.0.1:1")


def test_recorder_starts_set03_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("asana")[0] == npm_bin(scratch, "mcp-server-asana")
    exe, args, _ = start_command("duckdb")
    assert exe == venv_bin(scratch, "duckdb", "mcp-server-duckdb")
    assert args == ["--db-path", os.path.join(scratch, "test.duckdb")]
    assert start_command("gmail")[2]["HOME"] == os.path.join(scratch, "home")


@pytest.mark.timeout(120)
def test_recorder_prepares_the_oauth_client_files_gmail_and_calendar_read_at_start(tmp_path):
    # Both set03 servers exit at start-up without an OAuth client file; they only use it when a tool is called.
    recorder = load_recorder()
    recorder.prepare(str(tmp_path))
    home = tmp_path / "home"
    for path in (home / ".gmail-mcp" / "gcp-oauth.keys.json", home / "gcp-oauth.keys.json"):
        client = json.loads(path.read_text())
        assert client["installed"]["client_id"] == "dummy"
    _, _, env = recorder.command_for(str(tmp_path), "google-calendar", "127.0.0.1:1")
    assert env["GOOGLE_OAUTH_CREDENTIALS"] == str(home / "gcp-oauth.keys.json")


def test_recorder_starts_set04_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("shortcut")[0] == npm_bin(scratch, "mcp-server-shortcut")
    # PyPI executables named unlike their package come from PYPI_BIN.
    exe, _, env = start_command("mssql")
    assert exe == venv_bin(scratch, "mssql", "mssql_mcp_server")
    assert env["MSSQL_PORT"] == "9"  # a closed local port: no database is reached
    assert start_command("jenkins")[0] == venv_bin(scratch, "jenkins", "mcp-jenkins")


def assert_placeholder_aws_credentials(start_command, servers):
    """The awslabs servers get placeholder credentials, never the caller's own."""
    for server in servers:
        env = start_command(server)[2]
        assert env["AWS_ACCESS_KEY_ID"] == "dummy" and env["AWS_SECRET_ACCESS_KEY"] == "dummy", server


def test_recorder_starts_set05_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("plane")[0] == npm_bin(scratch, "plane-mcp-server")
    exe, args, _ = start_command("argocd")
    assert exe == npm_bin(scratch, "argocd-mcp") and args == ["stdio"]  # transport subcommand: stdio, sse, http
    assert start_command("powerpoint")[0] == venv_bin(scratch, "powerpoint", "ppt_mcp_server")
    # MotherDuck's default database is its cloud service; a local DuckDB file needs no backend.
    exe, args, _ = start_command("motherduck")
    assert exe == venv_bin(scratch, "motherduck", "mcp-server-motherduck")
    assert args == ["--db-path", os.path.join(scratch, "motherduck.duckdb")]
    assert start_command("sonarqube")[2]["SONARQUBE_URL"] == "http://127.0.0.1:9"  # a closed local port


def test_recorder_starts_set06_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # @digitalocean/mcp's executable is plain "mcp"; its tools are limited to one service (droplets).
    exe, args, _ = start_command("digitalocean")
    assert exe == npm_bin(scratch, "mcp") and args == ["--services", "droplets"]
    # Paddle lists its read-only tools only (41; the default, non-destructive, is 63).
    assert "--tools=read-only" in start_command("paddle")[1]
    # The executeautomation database server opens a SQLite file of the scratch directory: no database server.
    exe, args, _ = start_command("database")
    assert exe == npm_bin(scratch, "ea-database-server") and args == [os.path.join(scratch, "ea-database.sqlite")]
    exe, args, _ = start_command("email")
    assert exe == venv_bin(scratch, "email", "mcp-email-server") and args == ["stdio"]
    assert start_command("tree-sitter")[0] == venv_bin(scratch, "tree-sitter", "mcp-server-tree-sitter")


def test_recorder_starts_set07_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Bright Data's executable is named "mcp" like DigitalOcean's (one .bin/mcp per npm prefix): its own script.
    exe, _, env = start_command("brightdata")
    assert os.path.normpath(exe) == os.path.join(scratch, "npm", "node_modules", "@brightdata", "mcp", "server.js")
    assert env["API_TOKEN"] == "dummy"
    # Microsoft 365 lists its To Do and Planner tools only (33; every preset lists 188).
    exe, args, _ = start_command("ms-365")
    assert exe == npm_bin(scratch, "ms-365-mcp-server") and args == ["--preset", "tasks"]
    assert start_command("square")[1] == ["start"]
    assert start_command("ecs")[0] == venv_bin(scratch, "ecs", "ecs-mcp-server")
    assert start_command("weather")[0] == venv_bin(scratch, "weather", "mcp_weather_server")
    assert_placeholder_aws_credentials(start_command, ("iam", "ecs", "cloudtrail"))


def test_recorder_starts_set08_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Vapi's executable is "mcp-server" (as Mapbox's is); AMap's "mcp-amap".
    assert start_command("vapi")[0] == npm_bin(scratch, "mcp-server")
    assert start_command("amap")[0] == npm_bin(scratch, "mcp-amap")
    assert start_command("neo4j-modeling")[0] == venv_bin(scratch, "neo4j-modeling", "mcp-neo4j-data-modeling")
    # Odoo and OpenSearch point at a closed local port: no backend is reached.
    assert start_command("odoo")[2]["ODOO_URL"] == "http://127.0.0.1:9"
    assert start_command("opensearch")[2]["OPENSEARCH_URL"] == "http://127.0.0.1:9"
    assert_placeholder_aws_credentials(start_command, ("sns-sqs", "aws-support", "redshift"))


def test_recorder_starts_set09_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Currents' executable is plain "mcp" (as DigitalOcean's is); BioMCP's is "biomcp" with a "run" subcommand.
    assert start_command("currents")[0] == npm_bin(scratch, "mcp")
    assert start_command("biomcp")[:2] == (venv_bin(scratch, "biomcp", "biomcp"), ["run"])
    assert start_command("azure-devops")[0] == npm_bin(scratch, "mcp-server-azure-devops")
    assert start_command("gcp-observability")[0] == npm_bin(scratch, "observability-mcp")
    # Azure DevOps and Valkey point at a closed local port: no backend is reached.
    assert start_command("azure-devops")[2]["AZURE_DEVOPS_ORG_URL"].startswith("http://127.0.0.1:9/")
    assert start_command("valkey")[2]["VALKEY_PORT"] == "9"
    assert start_command("taskmanager")[2]["TASK_MANAGER_FILE_PATH"] == os.path.join(scratch, "files", "tasks.json")
    assert_placeholder_aws_credentials(start_command, ("valkey", "aws-location"))


@pytest.mark.timeout(120)
def test_recorder_prepares_the_aws_profile_the_sns_sqs_server_opens_at_start(tmp_path):
    # awslabs.amazon-sns-sqs-mcp-server exits at start-up when the profile "default" does not exist.
    recorder = load_recorder()
    recorder.prepare(str(tmp_path))
    env = recorder.command_for(str(tmp_path), "sns-sqs", "127.0.0.1:1")[2]
    assert env["AWS_CONFIG_FILE"] == str(tmp_path / "aws-config")
    config = (tmp_path / "aws-config").read_text()
    assert config.startswith("[default]\n") and "region = us-east-1" in config
    assert "aws_secret_access_key" not in config  # a region only: the credentials stay placeholders in the env


def test_recorder_starts_set10_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Cloudinary's and MUI's executables are both named "mcp" (one .bin/mcp per npm prefix): their own scripts.
    exe, args, _ = start_command("cloudinary")
    assert os.path.normpath(exe) == os.path.join(scratch, "npm", "node_modules", "@cloudinary",
                                                 "asset-management-mcp", "bin", "mcp-server.js")
    assert args == ["start"]
    assert os.path.normpath(start_command("mui")[0]) == os.path.join(scratch, "npm", "node_modules", "@mui", "mcp",
                                                                    "stdio.js")
    assert start_command("mastra-docs")[0] == npm_bin(scratch, "mcp-docs-server")
    assert start_command("airflow")[0] == venv_bin(scratch, "airflow", "mcp-server-apache-airflow")
    # Airflow, Meilisearch, InfluxDB and MiniMax point at a closed local port: no backend is reached.
    assert start_command("airflow")[2]["AIRFLOW_HOST"] == "http://127.0.0.1:9"
    assert start_command("meilisearch")[2]["MEILI_HTTP_ADDR"] == "http://127.0.0.1:9"
    assert start_command("influxdb")[2]["INFLUXDB_URL"] == "http://127.0.0.1:9"
    assert start_command("minimax")[2]["MINIMAX_API_HOST"] == "http://127.0.0.1:9"
    # nx-mcp gets the scratch git repository as its workspace.
    assert start_command("nx")[1] == [os.path.join(scratch, "repo")]
    # Amazon MQ opens the AWS profile "default" at start-up, as SNS/SQS does: the scratch profile, placeholder keys.
    env = start_command("amazon-mq")[2]
    assert env["AWS_CONFIG_FILE"] == os.path.join(scratch, "aws-config")
    assert env["AWS_ACCESS_KEY_ID"] == "dummy" and env["AWS_SECRET_ACCESS_KEY"] == "dummy"


def test_recorder_starts_set11_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("baidu-map")[0] == npm_bin(scratch, "mcp-server-baidu-map")
    assert start_command("godot")[0] == npm_bin(scratch, "godot-mcp")
    assert start_command("miro")[:2] == (npm_bin(scratch, "mcp-miro"), ["--token", "dummy"])
    assert start_command("strava")[0] == npm_bin(scratch, "strava-mcp-server")
    assert start_command("astra-db")[0] == npm_bin(scratch, "astra-db-mcp")
    assert start_command("mysql")[0] == venv_bin(scratch, "mysql", "mysql_mcp_server")
    assert start_command("es-search")[0] == venv_bin(scratch, "es-search", "elasticsearch-mcp-server")
    # Firebase reads the throwaway service-account file prepare() writes; nothing reaches Google.
    exe, _, env = start_command("firebase")
    assert exe == npm_bin(scratch, "firebase-mcp")
    assert env["SERVICE_ACCOUNT_KEY_PATH"] == os.path.join(scratch, "service-account.json")
    # MySQL, Elasticsearch and Astra DB point at a closed local port: no backend is reached.
    assert start_command("mysql")[2]["MYSQL_PORT"] == "9"
    assert start_command("es-search")[2]["ELASTICSEARCH_HOSTS"] == "http://127.0.0.1:9"
    assert start_command("astra-db")[2]["ASTRA_DB_API_ENDPOINT"] == "http://127.0.0.1:9"
    assert_placeholder_aws_credentials(start_command, ("aws-serverless", "elasticache", "aws-dataprocessing"))


def test_recorder_starts_set12_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("codacy")[0] == npm_bin(scratch, "codacy-mcp-server")
    assert start_command("jira")[0] == npm_bin(scratch, "mcp-atlassian-jira")
    assert start_command("next-devtools")[0] == npm_bin(scratch, "next-devtools-mcp")
    assert start_command("omnifocus")[0] == npm_bin(scratch, "omnifocus-mcp")
    # Prisma's MCP server is a subcommand of its CLI.
    assert start_command("prisma")[:2] == (npm_bin(scratch, "prisma"), ["mcp"])
    assert start_command("ida-pro")[0] == venv_bin(scratch, "ida-pro", "ida-pro-mcp")
    assert start_command("memgraph")[0] == venv_bin(scratch, "memgraph", "mcp-memgraph")
    # Memgraph points at a closed local port: no database is reached.
    assert start_command("memgraph")[2]["MEMGRAPH_URL"] == "bolt://127.0.0.1:9"
    assert_placeholder_aws_credentials(start_command, ("appsync", "s3-tables", "appsignals", "documentdb", "timestream-influxdb"))


def test_recorder_installs_ida_pro_with_the_mcp_1_sdk():
    # ida-pro-mcp 1.4.0 imports mcp.server.fastmcp, which mcp 2.x removed: without the pin it exits at start.
    assert "mcp<2" in load_recorder().PYPI_EXTRA["ida-pro-mcp"]


def test_recorder_starts_set13_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    assert start_command("clarity")[:2] == (npm_bin(scratch, "clarity-mcp-server"), ["--clarity_api_token", "dummy"])
    assert start_command("playwright-ea")[0] == npm_bin(scratch, "playwright-mcp-server")
    assert start_command("postgres-henkey")[0] == npm_bin(scratch, "postgres-mcp")
    assert start_command("memcached")[0] == venv_bin(scratch, "memcached", "awslabs.memcached-mcp-server")
    # Kubernetes, Postgres and memcached point at closed local ports: no backend is reached.
    exe, args, _ = start_command("kubernetes-go")
    assert exe == npm_bin(scratch, "kubernetes-mcp-server") and args == ["--kubeconfig", os.path.join(scratch, "kubeconfig")]
    assert "127.0.0.1:9" in start_command("postgres-henkey")[1][1]
    assert start_command("memcached")[2]["MEMCACHED_PORT"] == "9"
    assert_placeholder_aws_credentials(start_command, ("keyspaces", "neptune", "aurora-dsql", "finch", "memcached",
                                                       "aurora-postgres", "sagemaker-ai", "wa-security"))


def test_recorder_starts_set14_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Three servers are a subcommand of a bigger CLI: without it they print help or start something else.
    assert start_command("azure")[:2] == (npm_bin(scratch, "azmcp"), ["server", "start"])
    assert start_command("convex")[:2] == (npm_bin(scratch, "convex"), ["mcp", "start"])
    assert start_command("xcodebuild")[:2] == (npm_bin(scratch, "xcodebuildmcp"), ["mcp"])
    # .bin/mcp is a name many packages take: ESLint's server is started by its own path.
    assert start_command("eslint")[0] == npm_bin(scratch, "../@eslint/mcp/src/mcp-cli.js")
    assert start_command("pdf")[:2] == (npm_bin(scratch, "mcp-pdf-server"), ["--stdio"])
    # Opik points at a closed local port and Search Console at the placeholder service account: no backend.
    assert start_command("opik")[2]["OPIK_API_BASE_URL"] == "http://127.0.0.1:9/api"
    env = start_command("search-console")[2]
    assert env["GOOGLE_APPLICATION_CREDENTIALS"] == os.path.join(scratch, "service-account.json")
    assert start_command("shrimp-tasks")[2]["DATA_DIR"] == os.path.join(scratch, "shrimp-data")


def test_recorder_starts_set16_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Claude Code's MCP server is a subcommand of its CLI: without it the CLI starts an interactive session.
    assert start_command("claude-code")[:2] == (npm_bin(scratch, "claude"), ["mcp", "serve"])
    # .bin/mcp-server and .bin/redis are names other packages take: these start by their own paths.
    assert start_command("chatwork")[0] == npm_bin(scratch, "../@chatwork/mcp-server/dist/index.js")
    assert start_command("redis-gongrzhe")[0] == npm_bin(scratch, "../@gongrzhe/server-redis-mcp/build/index.js")
    assert start_command("mysql-f4")[0] == npm_bin(scratch, "../@f4ww4z/mcp-mysql-server/build/index.js")
    # MySQL points at a closed local port and Redis at the recorder's stand-in: no backend is reached.
    env = start_command("mysql-f4")[2]
    assert (env["MYSQL_HOST"], env["MYSQL_PORT"]) == ("127.0.0.1", "9")
    assert start_command("redis-gongrzhe")[1] == ["redis://127.0.0.1:1"]
    # freee and Contentful exit at start without credentials: placeholders, never the caller's own.
    assert start_command("freee")[2]["FREEE_CLIENT_SECRET"] == "dummy"
    assert start_command("contentful")[2]["CONTENTFUL_MANAGEMENT_ACCESS_TOKEN"] == "dummy"


def test_recorder_starts_set17_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # .bin/mcp is a name several packages take: Infisical's and Magic UI's servers start by their own paths.
    assert start_command("infisical")[0] == npm_bin(scratch, "../@infisical/mcp/dist/index.js")
    assert start_command("magicui")[0] == npm_bin(scratch, "../@magicuidesign/mcp/dist/server.js")
    # Serena's MCP server is a subcommand of its CLI; kubectl-mcp-tool's executable is not its package name.
    exe, args, _ = start_command("serena")
    assert exe == venv_bin(scratch, "serena", "serena") and args[:3] == ["start-mcp-server", "--transport", "stdio"]
    assert start_command("kubectl")[0] == venv_bin(scratch, "kubectl", "kubectl-mcp")
    # Infisical, kubectl and the SQLAlchemy bridge point at closed local ports or a scratch file: no backend.
    assert start_command("infisical")[2]["INFISICAL_HOST_URL"] == "http://127.0.0.1:9"
    assert start_command("kubectl")[2]["KUBECONFIG"] == os.path.join(scratch, "kubeconfig")
    assert start_command("alchemy")[2]["DB_URL"] == "sqlite:///" + os.path.join(scratch, "alchemy.db")
    # These exit at start with the MCP 2 SDK (or bibtexparser 2): the recorder installs the older ones.
    extra = load_recorder().PYPI_EXTRA
    for package in ("mcp-text-editor", "mcp-server-pacman", "skydeckai-code", "mcp-scholarly"):
        assert "mcp<2" in extra[package], package
    assert "bibtexparser<2" in extra["mcp-scholarly"]


def test_recorder_starts_set18_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # Office-Word's executable is not its package name; Basic Memory's MCP server is a subcommand of its CLI.
    assert start_command("word")[0] == venv_bin(scratch, "word", "word_mcp_server")
    assert start_command("basic-memory")[:2] == (venv_bin(scratch, "basic-memory", "basic-memory"), ["mcp"])
    # Proxmox, Redmine and GreptimeDB point at closed local ports: no backend is reached.
    assert start_command("proxmox")[2]["PROXMOX_HOST"] == "127.0.0.1" and start_command("proxmox")[2]["PROXMOX_PORT"] == "9"
    # proxmox-mcp-plus refuses to start with verify_ssl off ("Insecure TLS configuration blocked").
    assert start_command("proxmox")[2]["PROXMOX_VERIFY_SSL"] == "true"
    assert start_command("redmine")[2]["REDMINE_URL"] == "http://127.0.0.1:9"
    assert start_command("greptime")[2]["GREPTIMEDB_PORT"] == "9"
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    extra = load_recorder().PYPI_EXTRA
    for package in ("uv-mcp", "mcp-hn", "mcp-simple-pubmed"):
        assert "mcp<2" in extra[package], package
    assert "pydantic-settings" in extra["mcp-simple-pubmed"]


def test_recorder_makes_the_venv_of_a_python_3_12_server_with_that_python(tmp_path, monkeypatch):
    # kagimcp, mcp-hn and basic-memory publish no release for Python < 3.12: pip on the recorder's
    # own Python finds none, so their venv is made with the interpreter PYPI_PYTHON names.
    recorder = load_recorder()
    calls = []
    monkeypatch.setattr(recorder.subprocess, "run", lambda cmd, **kw: calls.append(cmd))
    recorder.install(str(tmp_path), ["kagi", "uv"])
    venvs = {cmd[-1]: cmd[0] for cmd in calls if cmd[1:3] == ["-m", "venv"]}
    assert venvs[os.path.join(str(tmp_path), "venv-kagi")] == "python3.12"
    assert venvs[os.path.join(str(tmp_path), "venv-uv")] == recorder.sys.executable
    assert [os.path.join(str(tmp_path), "venv-kagi", "bin", "python"), "-m", "pip", "install", "--quiet",
            "--disable-pip-version-check", "kagimcp==1.0.2"] in calls


def test_recorder_starts_set19_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # The ServiceNow fork's executable is not its package name; Ansible's MCP server is a subcommand.
    assert start_command("servicenow")[0] == venv_bin(scratch, "servicenow", "mcp-server-servicenow")
    assert start_command("ansible")[:2] == (venv_bin(scratch, "ansible", "ansible-mcp"), ["serve", "--stdio"])
    # Backends are a closed local port: no server reaches a real one.
    assert start_command("databricks")[2]["DATABRICKS_HOST"] == "http://127.0.0.1:9"
    assert start_command("mlflow")[2]["MLFLOW_TRACKING_URI"] == "http://127.0.0.1:9"
    assert start_command("gitea")[2]["GITEA_URL"] == "http://127.0.0.1:9"
    assert start_command("couchbase-guru")[2]["CB_AGENT_BASE_URL"] == "http://127.0.0.1:9"
    recorder = load_recorder()
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    for package in ("databricks-mcp-server", "mcp-ollama", "toggl-mcp", "iflow-mcp_mcp-server-servicenow", "ansible-mcp"):
        assert "mcp<2" in recorder.PYPI_EXTRA[package], package
    # Mattermost's server needs its [mcp] extra (fastmcp); FreeCAD's and Ansible's need Python 3.12.
    assert "mattermost-mcp[mcp]" in recorder.PYPI_EXTRA["mattermost-mcp"]
    assert recorder.PYPI_PYTHON["freecad-mcp"] == recorder.PYPI_PYTHON["ansible-mcp"] == "python3.12"


def test_recorder_starts_set20_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # excel-mcp-server serves stdio only when asked; mcp-gsuite reads the files prepare() writes.
    assert start_command("excel-py")[:2] == (venv_bin(scratch, "excel-py", "excel-mcp-server"), ["stdio"])
    exe, args, _ = start_command("gsuite")
    assert exe == venv_bin(scratch, "gsuite", "mcp-gsuite")
    assert args == ["--gauth-file", os.path.join(scratch, "gauth.json"), "--accounts-file",
                    os.path.join(scratch, "accounts.json"), "--credentials-dir", os.path.join(scratch, "files")]
    # Backends are a closed local port: no server reaches a real one.
    assert start_command("langfuse")[2]["LANGFUSE_HOST"] == "http://127.0.0.1:9"
    assert start_command("timeplus")[2]["TIMEPLUS_PORT"] == "9"
    assert start_command("cli")[2]["ALLOWED_DIR"] == os.path.join(scratch, "repo")
    recorder = load_recorder()
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    for package in ("mcp-gsuite", "mcp-timeplus", "paper-search-mcp", "cli-mcp-server"):
        assert "mcp<2" in recorder.PYPI_EXTRA[package], package
    # mcp-gsuite and mcp-timeplus publish no release for Python < 3.13.
    assert recorder.PYPI_PYTHON["mcp-gsuite"] == recorder.PYPI_PYTHON["mcp-timeplus"] == "python3.13"


def test_recorder_prepares_the_oauth_files_gsuite_reads_at_start(tmp_path):
    # mcp-gsuite exits at start-up without its OAuth client file and account list; it only uses them on a call.
    recorder = load_recorder()
    recorder.prepare(str(tmp_path))
    client = json.loads((tmp_path / "gauth.json").read_text())
    assert client["web"]["client_id"] == "dummy"
    assert client["web"]["token_uri"].startswith("http://127.0.0.1:9")
    accounts = json.loads((tmp_path / "accounts.json").read_text())
    assert accounts["accounts"][0]["email"] == "dummy@example.com"


def test_recorder_starts_set21_servers_from_the_scratch_install(start_command, tmp_path):
    scratch = str(tmp_path)
    # The Pi-hole fork's executable is not its package name; Vectara serves SSE unless told stdio;
    # the Zotero API server's MCP server is a subcommand.
    assert start_command("pihole")[0] == venv_bin(scratch, "pihole", "pihole-mcp-server")
    assert start_command("vectara")[:2] == (venv_bin(scratch, "vectara", "vectara-mcp"), ["--transport", "stdio"])
    assert start_command("zotero-api")[:2] == (venv_bin(scratch, "zotero-api", "zotero-api-mcp"), ["serve"])
    # Backends are a closed local port: no server reaches a real one.
    assert start_command("canvas")[2]["CANVAS_BASE_URL"] == "http://127.0.0.1:9"
    assert start_command("adx")[2]["ADX_CLUSTER_URL"] == "http://127.0.0.1:9"
    assert start_command("pihole")[2]["PIHOLE_URL"] == "http://127.0.0.1:9/"
    recorder = load_recorder()
    # These exit at start with the MCP 2 SDK: the recorder installs the older one.
    for package in ("vectara-mcp", "mcp-hetzner", "iflow-mcp_sbarbett-pihole-mcp-server", "mcp-chess", "fda-mcp"):
        assert "mcp<2" in recorder.PYPI_EXTRA[package], package
    # The Pi-hole fork publishes no release for Python < 3.13.
    assert recorder.PYPI_PYTHON["iflow-mcp_sbarbett-pihole-mcp-server"] == "python3.13"
