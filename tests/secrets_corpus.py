"""A corpus for the secrets ban: credential kinds and harmless look-alikes, each in a memory-like sentence.

No value here is a live credential, and none is written out in this file: every
credential is built when the corpus is made, from its provider's published
format (prefix, alphabet, length) filled with values from a seeded generator,
so the repository itself holds nothing a scanner would flag and every run sees
the same corpus. ``credentials()`` and ``look_alikes()`` return
``(kind, text)`` pairs: ``kind`` names the case (one per format or form), the
text is what a session might ask to remember.

Used by tests/test_secrets_corpus.py (refusal and false-refusal floors) and
bench/secrets.py (the rates and time per memory, per detector).
"""

from __future__ import annotations

import base64
import random
import string
import uuid

SEED = 22

ALNUM = string.ascii_letters + string.digits
LOWER = string.ascii_lowercase + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
BASE32 = string.ascii_uppercase + "234567"


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, alphabet: str, n: int) -> str:
        # Every value mixes classes, as a real random token does (no all-letter run a rule might skip).
        while True:
            value = "".join(self.rng.choice(alphabet) for _ in range(n))
            mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            if n < 8 or alphabet == HEX or not any(c.isdigit() for c in alphabet) or mixed:
                return value

    def digits(self, n: int) -> str:
        return str(self.rng.randint(1, 9)) + "".join(self.rng.choice(string.digits) for _ in range(n - 1))

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def b64(self, n_bytes: int) -> str:
        return base64.b64encode(self.rng.randbytes(n_bytes)).decode()

    def password(self, specials: str = "", n: int = 14) -> str:
        core = self(ALNUM, n)
        i = self.rng.randint(2, len(core) - 2)
        return core[:i] + specials + core[i:]


def _pem(label: str, g: _Gen, extra: str = "") -> str:
    dashes = "-" * 5
    body = "\n".join(g.b64(48) for _ in range(4))
    return f"{dashes}BEGIN {label}{dashes}\n{extra}{body}\n{dashes}END {label}{dashes}"


def _jwt(g: _Gen) -> str:
    def part(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")
    head = part('{"alg":"HS256","typ":"JWT"}')
    claims = part('{"sub":"' + g.digits(10) + '","name":"' + g(LOWER, 8) + '","iat":' + g.digits(10) + "}")
    return f"{head}.{claims}.{g(B64URL, 43)}"


def credentials(seed: int = SEED) -> list[tuple[str, str]]:
    """Return ``(kind, text)`` for every credential kind: each text must be refused."""
    g = _Gen(seed)
    basic = base64.b64encode(f"deploy:{g.password('!')}".encode()).decode()
    raw_key = _pem("RSA PRIVATE KEY", g)
    cases = [
        # --- provider formats with a documented prefix ---
        ("aws-access-key-id", f"The CI user's key is AKIA{g(BASE32, 16)} for the build bucket."),
        ("aws-session-key-id", f"Temporary creds from sts: ASIA{g(BASE32, 16)} expire hourly."),
        ("aws-secret-access-key", f"aws_secret_access_key = {g(B64, 40)}"),
        ("github-classic-pat", f"Use ghp_{g(ALNUM, 36)} to push the release tag."),
        ("github-oauth", f"The OAuth app issued gho_{g(ALNUM, 36)} for the bot."),
        ("github-user-to-server", f"ghu_{g(ALNUM, 36)} came from the GitHub App login."),
        ("github-server-to-server", f"Installation token ghs_{g(ALNUM, 36)} lasts an hour."),
        ("github-refresh", f"refresh with ghr_{g(ALNUM, 76)} when it lapses"),
        ("github-fine-grained", f"fine-grained PAT github_pat_{g(ALNUM, 22)}_{g(ALNUM, 59)} reads the repo"),
        ("gitlab-pat", f"GitLab token glpat-{g(B64URL, 20)} has api scope."),
        ("gitlab-pipeline-trigger", f"Trigger the pipeline with glptt-{g(HEX, 40)}."),
        ("gitlab-runner-registration", f"Register the runner with GR1348941{g(B64URL, 20)}."),
        ("gitlab-runner-auth", f"The runner authenticates with glrt-{g(B64URL, 20)}."),
        ("slack-bot", f"Slack bot token: xoxb-{g.digits(12)}-{g.digits(13)}-{g(ALNUM, 24)}"),
        ("slack-user", f"The user token xoxp-{g.digits(12)}-{g.digits(12)}-{g.digits(13)}-{g(HEX, 32)} posts as me."),
        ("slack-app-level", f"Socket mode needs xapp-1-A{g(UPPER, 10)}-{g.digits(13)}-{g(HEX, 64)} in the app."),
        ("slack-config-refresh", f"config refresh token xoxe-1-{g(ALNUM, 146)}"),
        ("slack-webhook", f"Alerts go to https://hooks.slack.com/services/T{g(UPPER, 10)}/B{g(UPPER, 10)}/{g(ALNUM, 24)}"),
        ("stripe-live-secret", f"Stripe live key sk_live_{g(ALNUM, 24)} charges cards."),
        ("stripe-test-secret", f"In staging we use sk_test_{g(ALNUM, 24)} for checkout."),
        ("stripe-restricted", f"The restricted key rk_live_{g(ALNUM, 24)} only reads charges."),
        ("stripe-webhook-secret", f"Verify events with whsec_{g(ALNUM, 32)} in the handler."),
        ("square-access-token", f"Square production token EAAA{g(B64URL, 60)} for the POS."),
        ("square-legacy-token", f"sq0atp-{g(B64URL, 22)} is the Square sandbox token"),
        ("square-oauth-secret", f"Square app secret sq0csp-{g(B64URL, 43)}"),
        ("google-api-key", f"Maps key AIza{g(B64URL, 35)} is restricted to the site."),
        ("google-oauth-client-secret", f"client secret GOCSPX-{g(B64URL, 28)} for the desktop app"),
        ("google-oauth-refresh", f"Refresh token 1//0{g(B64URL, 100)} keeps Drive access."),
        ("google-oauth-access", f"Call the API with ya29.{g(B64URL, 150)} as the bearer."),
        ("gcp-service-account", '{"type": "service_account", "private_key_id": "' + g(HEX, 40)
         + '", "private_key": "' + _pem("PRIVATE KEY", g).replace("\n", "\\n") + '"}'),
        ("age-secret-key", f"Backups decrypt with AGE-SECRET-KEY-1{g(BECH32, 58)}"),
        ("databricks", f"Databricks workspace token dapi{g(HEX, 32)} for jobs."),
        ("mailgun-private", f"Mailgun API key key-{g(HEX, 32)} sends the digests."),
        ("mailgun-webhook-signing", f"Mailgun signing key {g(HEX, 32)}-{g(HEX, 8)}-{g(HEX, 8)} checks webhooks."),
        ("mailchimp", f"Mailchimp key {g(HEX, 32)}-us{g.digits(2)} manages the list."),
        ("heroku-api", f"HEROKU_API_KEY is {g.uuid()} for the deploy script."),
        ("heroku-new", f"Heroku token HRKU-AA{g(B64URL, 58)} deploys the app."),
        ("shopify-access", f"Shopify admin token shpat_{g(HEX, 32)} for the store."),
        ("shopify-shared-secret", f"Shopify app secret shpss_{g(HEX, 32)} signs webhooks."),
        ("shopify-custom-app", f"shpca_{g(HEX, 32)} is the custom app token"),
        ("shopify-private-app", f"private app password shppa_{g(HEX, 32)}"),
        ("vault-service-token", f"Vault token hvs.{g(B64URL, 90)} reads kv/prod."),
        ("vault-batch-token", f"batch token hvb.{g(B64URL, 138)} for the job"),
        ("terraform-cloud", f"TFC token {g(ALNUM, 14)}.atlasv1.{g(B64URL, 67)} runs plans."),
        ("postman", f"Postman API key PMAK-{g(HEX, 24)}-{g(HEX, 34)} syncs collections."),
        ("linear", f"Linear key lin_api_{g(ALNUM, 40)} files the issues."),
        ("notion-legacy", f"Notion integration secret_{g(ALNUM, 43)} edits the wiki."),
        ("notion-ntn", f"Notion token ntn_{g.digits(11)}{g(ALNUM, 35)} for the sync."),
        ("atlassian", f"Jira API token ATATT3xFfGF0{g(B64URL, 170)}={g(HEX, 8).upper()} for the bot."),
        ("sentry-user", f"Sentry auth token sntryu_{g(HEX, 64)} uploads sourcemaps."),
        ("sentry-org", f"Sentry org token sntrys_eyJpYXQiO{g(B64, 120)}_{g(B64URL, 43)}"),
        ("doppler", f"Doppler service token dp.st.prd.{g(ALNUM, 43)} loads config."),
        ("doppler-personal", f"Doppler personal token dp.pt.{g(ALNUM, 43)}"),
        ("grafana-service-account", f"Grafana SA token glsa_{g(ALNUM, 32)}_{g(HEX, 8)} for dashboards."),
        ("grafana-cloud", f"Grafana Cloud token glc_eyJvIjoi{g(B64, 80)}"),
        ("npm", f"npm publish uses npm_{g(ALNUM, 36)} from CI."),
        ("pypi", f"Upload with pypi-AgEIcHlwaS5vcmc{g(B64URL, 70)}"),
        ("docker-hub", f"Docker Hub PAT dckr_pat_{g(B64URL, 27)} pushes images."),
        ("digitalocean", f"DigitalOcean token dop_v1_{g(HEX, 64)} manages droplets."),
        ("huggingface", f"HF token hf_{g(string.ascii_letters, 34)} downloads gated models."),
        ("openai-project", f"OpenAI key sk-proj-{g(B64URL, 156)}"),
        ("anthropic-api", f"Anthropic key sk-ant-api03-{g(B64URL, 93)}AA for the evals."),
        ("anthropic-admin", f"admin key sk-ant-admin01-{g(B64URL, 93)}AA"),
        ("groq", f"Groq key gsk_{g(ALNUM, 52)}"),
        ("replicate", f"Replicate token r8_{g(ALNUM, 37)}"),
        ("xai", f"xAI key xai-{g(ALNUM, 80)}"),
        ("twilio-api-key", f"Twilio API key SK{g(HEX, 32)} sends SMS."),
        ("sendgrid", f"SendGrid key SG.{g(B64URL, 22)}.{g(B64URL, 43)} for mail."),
        ("discord-bot", f"Discord bot token M{g(B64URL, 25)}.{g(B64URL, 6)}.{g(B64URL, 38)}"),
        ("telegram-bot", f"Telegram bot token {g.digits(10)}:AA{g(B64URL, 33)}"),
        ("azure-storage-key", f"DefaultEndpointsProtocol=https;AccountName=prodlogs;AccountKey={g.b64(64)};EndpointSuffix=core.windows.net"),
        ("azure-ad-client-secret", f"Entra app secret {g(ALNUM, 3)}8Q~{g(B64URL, 31)} expires in June."),
        ("azure-devops-pat", f"Azure DevOps PAT {g(ALNUM, 76)}AZDO{g(ALNUM, 4)} for the pipeline."),
        ("alibaba", f"Alibaba access key LTAI{g(ALNUM, 20)}"),
        ("datadog", f"DD_API_KEY={g(HEX, 32)}"),
        ("new-relic-user", f"New Relic key NRAK-{g(UPPER, 27)}"),
        ("bitbucket-app-password", f"Bitbucket app password ATBB{g(ALNUM, 32)}"),
        ("figma", f"Figma token figd_{g(B64URL, 40)}"),
        ("airtable-pat", f"Airtable pat{g(ALNUM, 14)}.{g(HEX, 64)}"),
        ("supabase", f"Supabase token sbp_{g(HEX, 40)} for migrations."),
        ("netlify", f"Netlify token nfp_{g(ALNUM, 40)}"),
        ("planetscale", f"PlanetScale token pscale_tkn_{g(B64URL, 43)}"),
        ("pulumi", f"Pulumi token pul-{g(HEX, 40)}"),
        ("prefect", f"Prefect key pnu_{g(ALNUM, 36)}"),
        ("rubygems", f"gem push with rubygems_{g(HEX, 48)}"),
        ("mapbox-secret", f"Mapbox secret token sk.eyJ1Ijoi{g(ALNUM, 60)}.{g(B64URL, 22)}"),
        ("flyio", f"Fly token FlyV1 fm2_{g(B64, 120)}"),
        ("cloudflare-origin-ca", f"Cloudflare origin CA key v1.0-{g(HEX, 24)}-{g(HEX, 146)}"),
        ("jwt", f"The session cookie was {_jwt(g)} after login."),
        # --- private keys in their envelopes ---
        ("pem-rsa", _pem("RSA PRIVATE KEY", g)),
        ("pem-openssh", _pem("OPENSSH PRIVATE KEY", g)),
        ("pem-ec", _pem("EC PRIVATE KEY", g)),
        ("pem-pkcs8", _pem("PRIVATE KEY", g)),
        ("pem-pkcs8-encrypted", _pem("ENCRYPTED PRIVATE KEY", g)),
        ("pem-dsa", _pem("DSA PRIVATE KEY", g)),
        ("pgp-private-block", _pem("PGP PRIVATE KEY BLOCK", g, "Version: GnuPG v2\n\n")),
        ("putty-v3", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\n"
         f"Public-Lines: 2\n{g.b64(48)}\n{g.b64(20)}\nPrivate-Lines: 1\n{g.b64(48)}\nPrivate-MAC: {g(HEX, 64)}"),
        ("kubeconfig-client-key", "users:\n- name: admin\n  user:\n    client-key-data: "
         + base64.b64encode(raw_key.encode()).decode()),
        ("pem-one-line", "key was " + _pem("PRIVATE KEY", g).replace("\n", " ")),
        # --- URL forms ---
        ("url-password-plain", f"Connect to postgres://app:{g.password()}@db.internal:5432/app"),
        ("url-password-bang", f"mysql://root:{g.password('!')}@10.0.0.5/shop"),
        ("url-password-hash", f"amqp://worker:{g.password('#')}@mq.internal/"),
        ("url-password-dollar-amp", f"mongodb://admin:{g.password('$&')}@mongo:27017"),
        ("url-password-quote-paren", f"redis://cache:{g.password(chr(39) + '()')}@cache:6379/0"),
        ("url-password-star-plus", f"postgresql://svc:{g.password('*+')}@pg/app"),
        ("url-password-comma-semicolon", f"ftp://backup:{g.password(',;')}@files.internal/"),
        ("url-password-equals-question", f"https://ci:{g.password('=?')}@nexus.internal/repo"),
        ("url-password-brackets", f"smtp://mailer:{g.password('[]')}@smtp.internal:587"),
        ("url-password-slash-colon", f"postgres://etl:{g.password('/:')}@warehouse/db"),
        ("url-password-percent", f"postgres://etl:{g.password('%40%23')}@warehouse/db"),
        ("url-password-no-user", f"redis://:{g.password()}@cache.internal:6379"),
        ("url-token-git", f"git clone https://x-access-token:{g(ALNUM, 40)}@git.internal/org/repo.git"),
        ("url-query-api-key", f"GET https://api.weather.example/v1?city=Oslo&api_key={g(ALNUM, 32)}"),
        ("url-query-access-token", f"https://graph.example.com/me?access_token={g(ALNUM, 48)}"),
        ("azure-sas", f"https://prodlogs.blob.core.windows.net/logs?sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2027-01-01T00:00:00Z&sig={g(ALNUM, 43)}%3D"),
        ("google-chat-webhook", f"https://chat.googleapis.com/v1/spaces/AAAA{g(B64URL, 7)}/messages?key=AIza{g(B64URL, 35)}&token={g(B64URL, 43)}"),
        ("discord-webhook", f"https://discord.com/api/webhooks/{g.digits(18)}/{g(B64URL, 68)}"),
        ("teams-webhook", f"https://contoso.webhook.office.com/webhookb2/{g.uuid()}@{g.uuid()}/IncomingWebhook/{g(HEX, 32)}/{g.uuid()}"),
        ("telegram-api-url", f"https://api.telegram.org/bot{g.digits(10)}:AA{g(B64URL, 33)}/sendMessage"),
        # --- headers ---
        ("basic-auth-header", f"Authorization: Basic {basic}"),
        ("bearer-header", f"curl -H 'Authorization: Bearer {g(B64URL, 40)}' https://api.internal"),
        ("api-key-header", f"curl -H 'X-API-Key: {g(ALNUM, 32)}' https://api.internal/v2"),
        # --- env and config assignments ---
        ("env-secret-key", f"SECRET_KEY={g(ALNUM + '!@#%^*-_', 50)}"),
        ("env-app-key", f"MYAPP_APP_KEY={g(ALNUM, 32)}"),
        ("env-laravel-app-key", f"APP_KEY=base64:{g.b64(32)}"),
        ("env-admin-key", f"SEARCH_ADMIN_KEY={g(ALNUM, 32)}"),
        ("env-private-key", f"PRIVATE_KEY=0x{g(HEX, 64)}"),
        ("env-admin-pass", f"ADMIN_PASS={g.password()}"),
        ("env-db-pass", f"DB_PASS={g.password('!')}"),
        ("env-client-secret", f"OAUTH_CLIENT_SECRET={g(ALNUM, 40)}"),
        ("env-jwt-secret", f"JWT_SECRET={g(ALNUM, 48)}"),
        ("env-encryption-key", f"ENCRYPTION_KEY={g.b64(32)}"),
        ("env-exported-token", f"export CF_API_TOKEN={g(B64URL, 40)}"),
        ("yaml-password", f"password: {g.password('#!')}"),
        ("json-client-secret", '{"client_id": "web", "client_secret": "' + g(ALNUM, 32) + '"}'),
        ("netrc", f"machine api.internal login bob password {g.password()}"),
        ("pgpass", f"db.internal:5432:app:app:{g.password()}"),
        ("npmrc", f"//registry.npmjs.org/:_authToken={g.uuid()}"),
        ("docker-config-auth", '{"auths": {"registry.internal": {"auth": "'
         + base64.b64encode(f"ci:{g.password()}".encode()).decode() + '"}}}'),
        # --- command lines ---
        ("cli-password-flag", f"run ./deploy --password {g.password()} --env prod"),
        ("cli-token-flag", f"gh-sync --token {g(ALNUM, 40)} --org acme"),
        ("cli-password-equals", f"pg_dump --password={g.password()} app > dump.sql"),
        ("cli-mysql-p", f"mysql -u root -p{g.password()} shop"),
        ("cli-sshpass", f"sshpass -p '{g.password()}' ssh deploy@web1"),
        ("cli-curl-u", f"curl -u admin:{g.password()} https://jenkins.internal/api/json"),
        ("cli-docker-login", f"docker login -u ci -p {g.password()} registry.internal"),
        ("cli-pgpassword", f"PGPASSWORD={g.password()} psql -h db app"),
        # --- hidden inside a token ---
        ("soft-hyphen-in-token", f"token ghp_{g(ALNUM, 18)}\u00ad{g(ALNUM, 18)} pushes tags"),
        ("zero-width-in-token", f"key sk_live_{g(ALNUM, 12)}\u200b{g(ALNUM, 12)}"),
        ("word-joiner-in-token", f"AKIA{g(BASE32, 8)}\u2060{g(BASE32, 8)} is the key"),
        ("bom-in-token", f"glpat-{g(B64URL, 10)}\ufeff{g(B64URL, 10)}"),
        ("fullwidth-token", "token " + "".join(chr(ord(c) + 0xFEE0) for c in f"ghp_{g(ALNUM, 36)}")),
        ("backticked-token", f"the key is `xoxb-{g.digits(12)}-{g.digits(13)}-{g(ALNUM, 24)}`"),
        # --- an AWS key id glued to other characters (a letter before, one upper-case character after) ---
        ("aws-key-id-glued-lower", f"the bucket key xAKIA{g(BASE32, 16)} was pasted without a space"),
        ("aws-key-id-glued-upper", f"AAKIA{g(BASE32, 16)} and AKIA{g(BASE32, 16)}Q came from the console"),
        # --- found by a tester: a password labelled pw, a mark inside a token, a session cookie, set ... to ---
        ("prose-pw", f"Jenkins admin pw: {g.password('#!', 12)}"),
        ("pw-equals", f"pw={g.password('#!', 12)} for the staging box"),
        ("variation-selector-in-token", f"token ghp_{g(ALNUM, 18)}\ufe0f{g(ALNUM, 18)} pushes tags"),
        ("combining-mark-in-token", f"token ghp_{g(ALNUM, 18)}\u0301{g(ALNUM, 18)} pushes tags"),
        ("session-cookie", f"Staging login needs Cookie: session={g(ALNUM, 40)}"),
        ("set-cookie-header", f"Set-Cookie: sid={g(LOWER, 32)}; Path=/; HttpOnly"),
        ("set-to-heroku-key", f"set HEROKU_API_KEY to {g.uuid()}"),
    ]
    return cases


def look_alikes(seed: int = SEED) -> list[tuple[str, str]]:
    """Return ``(kind, text)`` for harmless text that looks like a credential: none may be refused."""
    g = _Gen(seed + 1)
    dashes = "-" * 5
    return [
        # code that names where a secret comes from
        ("getpass", "password = getpass.getpass()"),
        # a memory file name the bench generates (snake_case words and numbers), as in `replaces:`
        ("memory-file-name", "replaces: feedback_memory_004_of_bank_07_trace_build_session_pointer.md"),
        ("settings-ref", "token = settings.SLACK_TOKEN"),
        ("config-attr", "api_key=config.api_key"),
        ("k8s-secret-name", "secret: db-credentials"),
        ("env-var-name-value", "access_key: AWS_ACCESS_KEY_ID"),
        ("ansible-vault-tag", "password: !vault |"),
        ("doc-url-user-password", "postgres://user:password@localhost"),
        ("doc-url-no-user", "redis://:password@host"),
        ("environ-subscript", 'api_key = os.environ["API_KEY"]'),
        ("getenv", 'token = os.getenv("GITHUB_TOKEN")'),
        ("environ-get", "password=os.environ.get('DB_PASSWORD')"),
        ("none-default", "secret_key = None"),
        ("type-annotation", "api_key: str"),
        ("optional-annotation", "password: Optional[str] = None"),
        ("password-stdin", "echo $PW | docker login --password-stdin -u ci registry"),
        ("token-variable-flag", "gh-sync --token $TOKEN --org acme"),
        ("password-quoted-variable", 'pg_dump --password "$DB_PASSWORD" app'),
        ("curl-u-variables", 'curl -u "$API_USER:$API_PASS" https://api.internal'),
        ("mysql-prompt", "mysql -u root -p shop  (it prompts for the password)"),
        ("mysql-port-flag", "mysql -h db -P 3306 -u app -p"),
        ("sshpass-env", "sshpass -e ssh deploy@web1 reads SSHPASS"),
        ("ssh-port", "ssh -p 2222 deploy@web1"),
        ("docker-port", "docker run -e POSTGRES_PASSWORD -p 5432:5432 postgres:16"),
        ("public-key-pem", f"{dashes}BEGIN PUBLIC KEY{dashes} starts the verifier's key file"),
        ("certificate-pem", f"{dashes}BEGIN CERTIFICATE{dashes} opens the CA bundle"),
        ("ssh-public-key", f"authorized_keys holds ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{g(B64, 43)} me@laptop"),
        ("git-sha", f"The fix landed in commit {g(HEX, 40)}."),
        ("sha256-digest", f"image digest sha256:{g(HEX, 64)}"),
        ("uuid-request-id", f"request id {g.uuid()} in the logs"),
        ("npm-integrity", f'"integrity": "sha512-{g.b64(64)}"'),
        ("url-user-only", "clone https://alice@git.internal/org/repo.git"),
        ("url-query-harmless", "https://example.com/search?page=2&sort=asc&q=token+budget"),
        ("placeholder-xoxb", "set SLACK_BOT_TOKEN to xoxb-your-token-here"),
        ("placeholder-angle", "ANTHROPIC_API_KEY=<your key>"),
        ("github-actions-expr", "SLACK_TOKEN: ${{ secrets.SLACK_TOKEN }}"),
        ("jinja-var", 'password: "{{ vault_db_password }}"'),
        ("redacted", "token: <redacted>"),
        ("stars", "password: ********"),
        ("redacted-brackets", "api_key: [REDACTED]"),
        ("bearer-variable", 'curl -H "Authorization: Bearer $TOKEN" https://api.internal'),
        ("bearer-placeholder", "Authorization: Bearer <token>"),
        ("ssh-key-path", "the deploy key is ~/.ssh/id_ed25519"),
        ("tls-key-path", "nginx reads /etc/ssl/private/server.key"),
        ("method-name", "def get_secret_key(self) -> str:"),
        ("kubectl-from-file", "kubectl create secret generic db-credentials --from-file=./password.txt"),
        ("aws-configure-get", "aws configure get aws_secret_access_key --profile prod"),
        ("prefix-mention", "Anthropic keys start with sk-ant- and GitHub's with ghp_ or github_pat_."),
        ("max-tokens", "max_tokens=4096 and token_count = len(tokens)"),
        ("bcrypt-call", "password_hash = bcrypt.hashpw(pw, bcrypt.gensalt())"),
        ("env-empty", "SECRET_KEY= (set it in .env, never commit it)"),
        ("env-name-prose", "the PRIVATE_KEY env var is read at startup"),
        ("url-no-credentials", "psql postgres://localhost:5432/app"),
        ("mongo-srv-no-credentials", "mongodb+srv://cluster0.example.net/test?retryWrites=true"),
        ("ssh-git-remote", "git@github.com:org/repo.git is the remote"),
        ("password-rule-prose", "The password must be at least 12 characters with one digit."),
        ("token-budget-prose", "input token: 18,000 of the budget"),
        ("secret-santa", "secret santa list is in the shared drive"),
        ("pin", "cryptography==42.0.5 fixes the build"),
        ("camel-identifier", "AbstractSingletonProxyFactoryBeanTokenizer is the class to patch"),
        ("hex-color", "the accent colour is #ff00aa"),
        ("api-key-file-flag", "--api-key-file ~/.config/acme/key"),
        ("private-key-path-var", 'private_key_path = "keys/deploy.pem"'),
        ("password-prompt-var", "password = input('Password: ')"),
        ("token-from-file", "token=$(cat ~/.config/gh/token)"),
        ("vault-path", "secret: https://vault.example.com/path holds it"),
        ("dotenv-reference", "api_key: configured in the vault"),
        ("password-required", "password: required. Ask the admin for one"),
        ("session-id", f"Claude session {g.uuid()} ended at 14:02."),
        # a long upper-case run that holds an AKIA-shaped stretch (a constant, a hash in capitals)
        ("upper-run-with-akia", f"ERRORCODE{g(UPPER, 6)}AKIA{g(BASE32, 16)}{g(UPPER, 8)} is the build's id"),
        ("base64-text", f"the fixture is {base64.b64encode(b'hello world, this is a test file').decode()}"),
        # beside the tester's four: pw in prose, a harmless cookie, set ... to a level, marks in prose
        ("pw-field-prose", "the pw field is required on the login form"),
        ("cookie-preference", "Cookie: theme=dark; lang=en-US; _ga=GA1.2.1234567890.1698765432"),
        ("set-to-level", "set LOG_LEVEL to debug and set the API_KEY to the staging value"),
        ("emoji-variation-selector", "\u2714\ufe0f done, \u26a0\ufe0f two warnings left"),
        ("combining-accents", "the cafe\u0301 and re\u0301sume\u0301 pages render their accents"),
    ]
