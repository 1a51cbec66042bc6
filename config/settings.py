"""The one settings module. Everything that differs between a laptop and production comes from the
environment through the typed readers in ``config.env``; nothing else in the code branches on the
environment.

Embedded by default (SQLite, a Celery worker on a file-system broker, in-memory channel layer);
real engines when ``DATABASE_URL`` / ``REDIS_URL`` are set.
"""

from __future__ import annotations

import datetime as dt
import secrets
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_json, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DESK_DATA_DIR", str(BASE_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
# The SQLite database, the secret key and the broker's messages live here: the desk's user only.
# Also tightened when the folder already exists (mkdir's mode applies only to a new one).
DATA_DIR.chmod(0o700)

DEBUG = env_bool("DEBUG", False)


def _secret_key() -> str:
    configured = env_str("SECRET_KEY")
    if configured:
        return configured
    # A laptop gets a random key kept beside its data, so sessions survive restarts.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
REQUIRE_SERVICES = env_bool("REQUIRE_SERVICES", False)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",  # API tokens: hashed at rest, expiring (replaces rest_framework.authtoken)
    "axes",  # log-in lock-out
    "csp",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "simple_history",
    "trading",
    "agents",
    "reviews",
    "research",
    "security",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.DeskLoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as axes asks: it turns a lock-out flagged during authentication into the lock-out page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "trading.home.context.desk_nav",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------
# Workers are other processes (and threads within them): WAL lets them read while another writes,
# and IMMEDIATE transactions take the write lock up front, waiting for it, instead of failing
# mid-way ("database is locked") when another connection committed since the transaction read.
SQLITE_OPTIONS = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    # Persistent connections leak under ASGI: each request runs in a thread of its own whose
    # connection is neither reused nor closed (one daphne held 50 after a 50-client burst). Each
    # process pools its connections instead, which needs CONN_MAX_AGE=0; DB_POOL_MAX_SIZE=0 turns
    # the pool off (e.g. behind PgBouncer) and a connection then lives for one request.
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0)}
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        # The same file semantics as the default database (a test's worker is pointed at it this way).
        DATABASES["default"]["OPTIONS"] = {**SQLITE_OPTIONS, **DATABASES["default"].get("OPTIONS", {})}
    DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 10, minimum=0)
    if DB_POOL_MAX_SIZE and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(env_int("DB_POOL_MIN_SIZE", 2, minimum=0), DB_POOL_MAX_SIZE),
            "max_size": DB_POOL_MAX_SIZE,
            # A request waits this long for a free connection before failing, rather than queueing forever.
            "timeout": env_float("DB_POOL_TIMEOUT", 10.0, minimum=0.1),
            # Connections idle this long are closed, one per interval, down to min_size.
            "max_idle": env_float("DB_POOL_MAX_IDLE", 600.0, minimum=1.0),
        }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "desk.sqlite3",
            "OPTIONS": dict(SQLITE_OPTIONS),
            # A file, not memory, so a real worker process can open the test database too.
            "TEST": {"NAME": str(DATA_DIR / "test.sqlite3")},
        }
    }
if REQUIRE_SERVICES and DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("REQUIRE_SERVICES=1 needs DATABASE_URL pointing at PostgreSQL.")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth ---------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# --- Security -----------------------------------------------------------------------------------
# HTTPS: one switch for a desk served over TLS (redirects, secure cookies, HSTS); off by default so a
# laptop over plain http keeps working. Behind a reverse proxy that terminates TLS, DESK_BEHIND_PROXY
# trusts its X-Forwarded-Proto and the last DESK_PROXY_COUNT entries of X-Forwarded-For (entries
# further left are written by the client, so a lock-out or throttle never reads them).
DESK_HTTPS = env_bool("DESK_HTTPS", False)
DESK_BEHIND_PROXY = env_bool("DESK_BEHIND_PROXY", False)
DESK_PROXY_COUNT = env_int("DESK_PROXY_COUNT", 1, minimum=1) if DESK_BEHIND_PROXY else 0
SECURE_SSL_REDIRECT = DESK_HTTPS
SESSION_COOKIE_SECURE = DESK_HTTPS
CSRF_COOKIE_SECURE = DESK_HTTPS
SECURE_HSTS_SECONDS = env_int("DESK_HSTS_SECONDS", 365 * 24 * 3600, minimum=0) if DESK_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DESK_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DESK_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if DESK_BEHIND_PROXY else None
if not SECURE_HSTS_PRELOAD:
    # Preloading is a separate, slow-to-undo submission to the browsers' lists, and the header's flag
    # lets anyone submit the domain: leaving it off is a decision, so the check suggesting it is silenced.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]

# Content-Security-Policy (django-csp; Django 5.2 has none built in). No inline script: pages load
# their scripts from static files and pass data in json_script blocks. Styles allow 'unsafe-inline'
# because Plotly writes its chart styles into <style> rules at run time (and Swagger UI's page has
# an inline <style>); a style cannot run code.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],  # Plotly's and Swagger UI's icons are data: URIs
        "connect-src": ["'self'"],  # the run page's fetch and its websocket ('self' covers ws/wss to the same host)
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        "upgrade-insecure-requests": DESK_HTTPS,
    }
}

# Log-in lock-out (django-axes): DESK_LOGIN_FAILURE_LIMIT wrong passwords for one username from one
# address lock that pair out for DESK_LOGIN_COOLOFF_MINUTES; other users and addresses are unaffected.
AUTHENTICATION_BACKENDS = ["security.backends.LockoutBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("DESK_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = dt.timedelta(minutes=env_int("DESK_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Failures during a lock-out are not counted, so the time the page gives stays true.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "security.lockout.lockout_response"
AXES_CLIENT_IP_CALLABLE = "security.throttles.client_address"
AXES_HTTP_RESPONSE_CODE = 429

# API tokens (django-rest-knox): stored as SHA-512 hashes, expire after API_TOKEN_TTL_HOURS, and
# are revoked when their user's password changes (security.tokens).
API_TOKEN_TTL_HOURS = env_float("API_TOKEN_TTL_HOURS", 10.0, minimum=0.01)
REST_KNOX = {"TOKEN_TTL": dt.timedelta(hours=API_TOKEN_TTL_HOURS), "AUTH_HEADER_PREFIX": "Token", "AUTO_REFRESH": False}


def _rate(name: str, default: str) -> str:
    value = env_str(name, default)
    count, _, period = value.partition("/")
    if not count.isdigit() or period[:1] not in ("s", "m", "h", "d"):
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate such as 10/min (per s, min, hour or day).")
    return value


# API throttles, counted in the "throttle" cache: Redis when configured, so every web process shares one count.
API_THROTTLE_RATES = {
    "anon": _rate("API_ANON_RATE", "60/min"),
    "user": _rate("API_USER_RATE", "1200/min"),
    "token": _rate("API_TOKEN_RATE", "10/min"),  # each request is a password guess
}
_THROTTLE_REDIS = env_str("REDIS_URL")
# Prepended to every key the desk writes in Redis (broker queues and results, channel layer, throttle
# counts), so several desks, or the test suite's parallel processes (one prefix each), can share one
# Redis database without reading each other's messages. Empty by default: the keys are unchanged.
REDIS_KEY_PREFIX = env_str("REDIS_KEY_PREFIX", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _THROTTLE_REDIS,
            "KEY_PREFIX": f"{REDIS_KEY_PREFIX}desk",
        }
        if _THROTTLE_REDIS
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "desk-throttle"}
    ),
}

# --- E-mail -------------------------------------------------------------------------------------
# Notifications a person opted into are e-mailed through Django's e-mail framework. The console
# backend (the default) prints them to the web or worker log; set DESK_EMAIL_BACKEND to
# "django.core.mail.backends.smtp.EmailBackend" and the EMAIL_* variables for a real server.
EMAIL_BACKEND = env_str("DESK_EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Trading desk <desk@localhost>")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
# The desk's address as people reach it, for the links in e-mails ("" = paths only).
DESK_BASE_URL = env_str("DESK_BASE_URL")

# --- Locale -------------------------------------------------------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = env_str("DESK_TIME_ZONE", "Asia/Kolkata")
USE_I18N = False
USE_TZ = True

# --- Static files ---------------------------------------------------------------------------------
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on a missing root before collectstatic
WHITENOISE_USE_FINDERS = True
# Hashed, compressed names (plotly.min.<hash>.js, with .gz and .br copies, cached a year) once
# `./desk up` has collected them; DESK_STATIC_HASHED=0|1 overrides (the test suite serves static/
# as it lies). A file added since the last collectstatic still answers under its plain name.
STATIC_HASHED = env_bool("DESK_STATIC_HASHED", (STATIC_ROOT / "staticfiles.json").exists())
WHITENOISE_MANIFEST_STRICT = False
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if STATIC_HASHED
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# --- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first: DRF answers a refused request with the first class's challenge, so an expired or
    # revoked token gets 401 with "WWW-Authenticate: Token" (re-authenticate), not a bare 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "knox.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_THROTTLE_CLASSES": ["security.throttles.AnonRateThrottle", "security.throttles.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": API_THROTTLE_RATES,
    # X-Forwarded-For is read only behind a trusted proxy; otherwise a client could name any address.
    "NUM_PROXIES": DESK_PROXY_COUNT,
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": env_int("API_PAGE_SIZE", 100, minimum=1),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # Every refusal (vocabulary.refusals) answers 400/403/409/503 by its kind, in one place.
    "EXCEPTION_HANDLER": "trading.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Trading desk API",
    "DESCRIPTION": "Market data, feature bundles and (later) runs, theses and approvals.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # 3.1: the pydantic models (FeatureBundle) describe optional numbers as "type: null" unions.
    "OAS_VERSION": "3.1.0",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -------------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REQUIRE_SERVICES and not REDIS_URL:
    raise ImproperlyConfigured("REQUIRE_SERVICES=1 needs REDIS_URL.")
BROKER_DIR = DATA_DIR / "broker"
if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {"visibility_timeout": 3600}
    if REDIS_KEY_PREFIX:
        # Queues, unacked messages and the workers' broadcast (pidbox) channels alike.
        CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = REDIS_KEY_PREFIX
        CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": REDIS_KEY_PREFIX}
else:
    # The embedded broker: a real worker process reading messages from a folder. No server.
    for sub in ("queue", "processed", "results", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = "filesystem://"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
    CELERY_RESULT_BACKEND = f"file://{BROKER_DIR / 'results'}"
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 600, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 660, minimum=1)
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Sending fails fast: one connection attempt of at most 2 s, no reconnect loop (kombu's own, 2 s then
# 4 s by default); a web request also sends without publish retries and answers with the reason. A
# worker's consuming connection keeps its own retries (broker_connection_max_retries).
CELERY_BROKER_CONNECTION_TIMEOUT = 2.0
CELERY_BROKER_TRANSPORT_OPTIONS.update({"max_retries": 0, "socket_connect_timeout": 2.0})
# A run's executor holds a lease this long, renewed every third of it while it works; a run whose
# lease expired has lost its worker and is taken over (at once by a worker starting on the same host).
RUN_LEASE_SECONDS = env_int("DESK_RUN_LEASE_SECONDS", 60, minimum=3)
# A run whose attempts keep dying fails with the last reason after this many.
RUN_MAX_ATTEMPTS = env_int("DESK_RUN_MAX_ATTEMPTS", 3, minimum=1)
# How often beat sends the runs committed while the broker was down (config/celery.py).
OUTBOX_SWEEP_SECONDS = env_int("DESK_OUTBOX_SWEEP_SECONDS", 60, minimum=5)

# --- Channels -----------------------------------------------------------------------------------
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                # No read timeout: the layer waits up to 5 s for a message on its own, and redis-py's
                # default 5 s socket timeout would cut that wait (a dropped websocket every 5 s).
                "hosts": [{"address": REDIS_URL, "socket_timeout": None}],
                "prefix": f"{REDIS_KEY_PREFIX}asgi",  # "asgi": channels_redis's own
            },
        }
    }
else:
    # In memory, relayed between processes through a small SQLite file: the worker's stage events
    # reach the web server's websockets without Redis.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "config.channel_layers.RelayedInMemoryChannelLayer",
            "CONFIG": {"path": str(DATA_DIR / "channels.sqlite3")},
        }
    }

# --- Desk ---------------------------------------------------------------------------------------
DESK = {
    # News older than this (calendar days before the as-of date) does not enter the bundle.
    "NEWS_LOOKBACK_DAYS": env_int("DESK_NEWS_LOOKBACK_DAYS", 14, minimum=1),
    "NEWS_HALF_LIFE_DAYS": env_float("DESK_NEWS_HALF_LIFE_DAYS", 3.0, minimum=0.1),
    "FORECAST_HORIZON_SESSIONS": env_int("DESK_FORECAST_HORIZON", 10, minimum=1),
    "MACRO_LIMIT": 5,
    # Bars loaded for a bundle: enough for SMA200 plus the EMA warm-up.
    "FEATURE_LOOKBACK_BARS": env_int("DESK_FEATURE_LOOKBACK_BARS", 400, minimum=210),
}

# --- Market data: imports, uploads, the provider (trading/market/imports.py, providers/) --------
MARKET_DATA = {
    # A close-to-close move beyond this (percent) with no corporate action is flagged as an outlier.
    "OUTLIER_MOVE_PCT": env_float("DESK_OUTLIER_MOVE_PCT", 25.0, minimum=1.0),
    # "" (off) or "yahoo": the provider fetch_bars and the after-close refresh read (yfinance, an
    # optional extra: pip install -r requirements-data.txt).
    "PROVIDER": env_str("DESK_MARKET_DATA_PROVIDER", "").strip().lower(),
    # A browser upload larger than this is refused before it is read.
    "UPLOAD_MAX_MB": env_int("DESK_UPLOAD_MAX_MB", 50, minimum=1),
    # Where browser uploads are kept (checked, then imported or discarded).
    "UPLOAD_DIR": DATA_DIR / "uploads",
}
if MARKET_DATA["PROVIDER"] not in ("", "yahoo"):
    raise ImproperlyConfigured('DESK_MARKET_DATA_PROVIDER must be empty (off) or "yahoo".')

# --- Models (stages 2-7) -----------------------------------------------------------------------
# Offline by default: the rules-based model needs no key and no network.
LLM = {
    "PROVIDER": env_str("LLM_PROVIDER", "offline"),
    "DEFAULT_MODEL": env_str("LLM_DEFAULT_MODEL"),
    "DEEP_MODEL": env_str("LLM_DEEP_MODEL"),
    "ANTHROPIC_API_KEY": env_str("ANTHROPIC_API_KEY"),
    "OPENAI_API_KEY": env_str("OPENAI_API_KEY"),
    "OPENAI_BASE_URL": env_str("OPENAI_BASE_URL"),
    "OLLAMA_HOST": env_str("OLLAMA_HOST"),
    # Budgets stop further calls with a clear status once spent (0 = no limit).
    "RUN_TOKEN_BUDGET": env_int("LLM_RUN_TOKEN_BUDGET", 400_000, minimum=0),
    "DAILY_COST_BUDGET": env_float("LLM_DAILY_COST_BUDGET", 25.0, minimum=0.0),
    # Price per million tokens by model, e.g. {"claude-sonnet-4-5": {"input": 3, "output": 15}, "*": {...}};
    # merged over the built-in defaults in agents/domain/pricing.py.
    "PRICES": env_json("LLM_PRICES", {}),
    # Makes the offline model wait like a networked one (benchmarks, demos of the live run page).
    "OFFLINE_LATENCY_MS": env_float("LLM_OFFLINE_LATENCY_MS", 0.0, minimum=0.0),
}
# A run with no stage activity for this long is presumed lost with its worker and is queued again.
STALE_RUN_MINUTES = env_int("DESK_STALE_RUN_MINUTES", 15, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "requeue-stale-runs": {"task": "trading.requeue_stale_runs", "schedule": 300.0},
    "expire-theses": {"task": "trading.expire_theses", "schedule": 300.0},
    "run-due-strategies": {"task": "trading.run_due_strategies", "schedule": 300.0},
    # The health page's proof that beat, broker and a worker move; a tick not run within the minute is dropped.
    "scheduler-tick": {"task": "trading.scheduler_tick", "schedule": 60.0, "options": {"expires": 55}},
    # After the close (desk time zone): fill next-open orders, exit by stop/target/horizon, mark the rest.
    "mark-positions": {"task": "trading.mark_positions", "schedule": crontab(hour=16, minute=30, day_of_week="1-5")},
}
if MARKET_DATA["PROVIDER"]:
    # After the close and before the marks (16:30): the day's bars of every active instrument.
    CELERY_BEAT_SCHEDULE["refresh-market-data"] = {
        "task": "trading.refresh_market_data",
        "schedule": crontab(hour=16, minute=5, day_of_week="1-5"),
    }

# The agents' memory is the in-process hybrid index (BM25 + hashed vectors); there is no other
# backend. The variable once chose between two, so a leftover value other than "hybrid" stops here.
if env_str("TRADING_MEMORY", "hybrid").lower() != "hybrid":
    raise ImproperlyConfigured(
        f'TRADING_MEMORY={env_str("TRADING_MEMORY")!r} is not a memory backend: the only one is "hybrid" '
        "(the ChromaDB backend was removed); unset TRADING_MEMORY."
    )

ACCOUNT = {
    "NAME": "paper",
    "CAPITAL": env_str("DESK_CAPITAL", "1000000"),
    "DAILY_LOSS_CAP_PCT": env_float("DESK_DAILY_LOSS_CAP_PCT", 2.0, minimum=0.0),
}

# --- Approval and the paper broker (stages 8-11) --------------------------------------------------
BROKER = {
    # A pending thesis can be approved for this long after it was made.
    "THESIS_TTL_MINUTES": env_int("DESK_THESIS_TTL_MINUTES", 24 * 60, minimum=1),
    # Approval is refused when the latest close has moved further than this many ATRs from the entry.
    "STALE_ATR_MULTIPLE": env_float("DESK_STALE_ATR_MULTIPLE", 1.0, minimum=0.01),
    "FILL_POLICY": env_str("DESK_FILL_POLICY", "next_open"),
    "SLIPPAGE_BPS": env_str("DESK_SLIPPAGE_BPS", "5"),
    # Overrides of the NSE delivery cost model, e.g. {"brokerage_flat": "20"}.
    "COSTS": env_json("DESK_COSTS", {}),
}
if BROKER["FILL_POLICY"] not in ("next_open", "last_price"):
    raise ImproperlyConfigured("DESK_FILL_POLICY must be next_open or last_price.")

# --- Retrospectives (reviews/) -------------------------------------------------------------------
# Three horizons on their own schedules, and the events that run a review at once. Money lines of the
# heuristic audit are counted in MONEY_UNIT (₹ by default): -1.0 means an average loss of ₹1,000.
RETROSPECTIVE = {
    "DAILY_ENABLED": env_bool("DESK_REVIEW_DAILY", True),
    "WEEKLY_ENABLED": env_bool("DESK_REVIEW_WEEKLY", True),
    "EPOCH_ENABLED": env_bool("DESK_REVIEW_EPOCH", True),
    "EPOCH_INTERVAL_DAYS": env_int("DESK_REVIEW_EPOCH_DAYS", 30, minimum=1),
    "POSITION_CLOSE_REVIEW": env_bool("DESK_REVIEW_POSITION_CLOSE", True),
    # A single realised loss above this share of current equity (percent) runs a review at once.
    "LOSS_REVIEW_THRESHOLD_PCT": env_float("DESK_REVIEW_LOSS_PCT", 5.0, minimum=0.0),
    # Model tiers: quick for daily/weekly/position reviews, deep for epochs and testaments.
    "REVIEW_TIER": env_str("DESK_REVIEW_TIER", "quick"),
    "EPOCH_TIER": env_str("DESK_REVIEW_EPOCH_TIER", "deep"),
    # Sessions after entry at which a position's PnL trajectory is read.
    "TRAJECTORY_CHECKPOINTS": [int(x) for x in env_list("DESK_REVIEW_CHECKPOINTS", ["1", "3", "7", "14", "30"])],
    # The heuristic audit.
    "HEURISTIC_MIN_CITATIONS": env_int("DESK_HEURISTIC_MIN_CITATIONS", 3, minimum=1),
    "HEURISTIC_DEMOTE_BELOW": env_str("DESK_HEURISTIC_DEMOTE_BELOW", "-1.0"),
    "HEURISTIC_INVESTIGATE_BELOW": env_str("DESK_HEURISTIC_INVESTIGATE_BELOW", "0.5"),
    "MONEY_UNIT": env_str("DESK_REVIEW_MONEY_UNIT", "1000"),
    # The forecast band's split-conformal correction.
    "RESIDUAL_BUFFER_SIZE": env_int("DESK_RESIDUAL_BUFFER", 200, minimum=1),
    "RESIDUAL_MIN_SAMPLES": env_int("DESK_RESIDUAL_MIN_SAMPLES", 30, minimum=1),
    "CONFORMAL_QUANTILE": env_float("DESK_CONFORMAL_QUANTILE", 0.90, minimum=0.5),
    # Confidence calibration.
    "CALIBRATION_MIN_SAMPLES": env_int("DESK_CALIBRATION_MIN_SAMPLES", 30, minimum=2),
    "CALIBRATION_REFIT_INTERVAL": env_int("DESK_CALIBRATION_REFIT_EVERY", 50, minimum=1),
    "ECE_ALARM_THRESHOLD": env_float("DESK_ECE_ALARM", 0.25, minimum=0.0),
    # Strategic effectiveness: flagged when inaction beats the strategy in more than this share of
    # positions for this many consecutive weekly reviews.
    "INACTION_FLAG_SHARE": env_float("DESK_INACTION_FLAG_SHARE", 0.70, minimum=0.0),
    "INACTION_FLAG_WEEKS": env_int("DESK_INACTION_FLAG_WEEKS", 2, minimum=1),
    # Hindsight raises a memory's retrieval weight to this.
    "HINDSIGHT_MEMORY_WEIGHT": env_float("DESK_HINDSIGHT_MEMORY_WEIGHT", 1.5, minimum=0.0),
    # The model calls' bill is recorded in the price table's currency (USD): this many units of the
    # account's currency per unit of it (e.g. "84.5"). Unset: a non-zero bill is left out, and said so.
    "INFERENCE_RATE": env_str("DESK_INFERENCE_RATE", ""),
    # Evaluators read at most this many rows per review (bounded buffers).
    "BUFFER_SIZE": env_int("DESK_REVIEW_BUFFER", 10_000, minimum=100),
}
CELERY_BEAT_SCHEDULE |= {
    # After the book pass (16:30): yesterday's trading is marked before it is reviewed.
    "review-daily": {"task": "reviews.daily_reviews", "schedule": crontab(hour=17, minute=0, day_of_week="1-5")},
    # The isotonic recalibration of stated confidence, refit when enough new calls have resolved.
    "review-calibration": {
        "task": "reviews.refit_calibration",
        "schedule": crontab(hour=17, minute=15, day_of_week="1-5"),
    },
    "review-weekly": {"task": "reviews.weekly_reviews", "schedule": crontab(hour=17, minute=30, day_of_week="5")},
    # Checked each evening; an account's epoch runs when EPOCH_INTERVAL_DAYS have passed since its last.
    "review-epoch": {"task": "reviews.epoch_reviews", "schedule": crontab(hour=18, minute=0)},
}

# --- The critique agent (reviews/critique/) -----------------------------------------------------
CRITIQUE = {
    "ENABLED": env_bool("DESK_CRITIQUE", True),
    # No critique before a strategy has this many runs; after that, each run fires with this chance.
    "MIN_RUNS": env_int("DESK_CRITIQUE_MIN_RUNS", 10, minimum=0),
    "PROBABILITY": env_float("DESK_CRITIQUE_PROBABILITY", 0.10, minimum=0.0),
    # Adaptive: the chance rises with a volatile trajectory, unresolved findings or a deepening
    # drawdown, and falls after clean reviews, between the floor and the ceiling.
    "ADAPTIVE": env_bool("DESK_CRITIQUE_ADAPTIVE", False),
    "PROBABILITY_FLOOR": env_float("DESK_CRITIQUE_FLOOR", 0.05, minimum=0.0),
    "PROBABILITY_CEILING": env_float("DESK_CRITIQUE_CEILING", 0.50, minimum=0.0),
    # Seed of the trigger's random source: the same strategy, run count and seed draw the same.
    "SEED": env_int("DESK_CRITIQUE_SEED", 0),
    # A live strategy run waits at most this long for its critique, then goes on under the
    # directive already in force.
    "DEADLINE_SECONDS": env_float("DESK_CRITIQUE_DEADLINE_SECONDS", 120.0, minimum=0.0),
    # Model tier of the critic (a senior strategist's review of many runs: deep by default).
    "TIER": env_str("DESK_CRITIQUE_TIER", "deep"),
    # Where each critique is archived as critique_run_NNN.json, one folder per strategy.
    "ARCHIVE_DIR": env_str("DESK_CRITIQUE_ARCHIVE_DIR", str(DATA_DIR / "critiques")),
    # The evidence pack: how many of the latest runs, theses and positions it reads.
    "LOOKBACK_RUNS": env_int("DESK_CRITIQUE_LOOKBACK_RUNS", 60, minimum=5),
    # A rank IC below this (in absolute value) is noise.
    "IC_FLOOR": env_float("DESK_CRITIQUE_IC_FLOOR", 0.03, minimum=0.0),
    # log_signal_ics: how many signal families must have their rank ICs logged.
    "MIN_IC_FAMILIES": env_int("DESK_CRITIQUE_MIN_IC_FAMILIES", 3, minimum=1),
}

# --- The research agent (research/) -------------------------------------------------------------
RESEARCH = {
    # Walk-forward: "rolling" or "anchored" windows, how many folds, and the purge gap (sessions)
    # between each in-sample window and the out-of-sample one after it.
    "WINDOW": env_str("DESK_RESEARCH_WINDOW", "rolling"),
    "FOLDS": env_int("DESK_RESEARCH_FOLDS", 5, minimum=2),
    "PURGE_BARS": env_int("DESK_RESEARCH_PURGE_BARS", 5, minimum=0),
    # The sacred holdout: the latest share of the data, reserved when a session starts.
    "HOLDOUT_FRACTION": env_float("DESK_RESEARCH_HOLDOUT", 0.20, minimum=0.05),
    # Promotion gates.
    "MIN_DSR": env_float("DESK_RESEARCH_MIN_DSR", 0.95, minimum=0.0),
    "MIN_TRADES": env_int("DESK_RESEARCH_MIN_TRADES", 10, minimum=1),
    "MAX_DRAWDOWN": env_float("DESK_RESEARCH_MAX_DRAWDOWN", 0.25, minimum=0.0),
    # A kept proposal's OOS drawdown may be at most this much worse than the incumbent's.
    "DRAWDOWN_GUARD": env_float("DESK_RESEARCH_DRAWDOWN_GUARD", 0.05, minimum=0.0),
    "SHORTLIST_SIZE": env_int("DESK_RESEARCH_SHORTLIST", 5, minimum=1),
    "PBO_SPLITS": env_int("DESK_RESEARCH_PBO_SPLITS", 8, minimum=2),
    # Budgets (the command's flags override them for one session).
    "MAX_TRIALS": env_int("DESK_RESEARCH_MAX_TRIALS", 50, minimum=1),
    "MAX_TOKENS": env_int("DESK_RESEARCH_MAX_TOKENS", 200_000, minimum=0),
    "DRY_ROUNDS": env_int("DESK_RESEARCH_DRY_ROUNDS", 8, minimum=1),
    # Starting capital of a backtest, in the instruments' currency.
    "CAPITAL": env_str("DESK_RESEARCH_CAPITAL", "1000000"),
    # Generated code: limits of the separate process it runs in.
    "SANDBOX_CPU_SECONDS": env_int("DESK_RESEARCH_SANDBOX_CPU", 10, minimum=1),
    "SANDBOX_MEMORY_MB": env_int("DESK_RESEARCH_SANDBOX_MEMORY_MB", 512, minimum=64),
    "SANDBOX_WALL_SECONDS": env_float("DESK_RESEARCH_SANDBOX_WALL", 20.0, minimum=1.0),
    # The journal (one JSONL file per session) and the candidates' config files.
    "JOURNAL_DIR": env_str("DESK_RESEARCH_JOURNAL_DIR", str(DATA_DIR / "research" / "journals")),
    "CANDIDATES_DIR": env_str("DESK_RESEARCH_CANDIDATES_DIR", str(DATA_DIR / "research" / "candidates")),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # Every record is redacted before it is written: a provider's error may echo its credentials.
    "filters": {"redact_secrets": {"()": "security.redaction.RedactSecretsFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact_secrets"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # axes announces its version at every start (each manage.py command): noise for an operator.
    "loggers": {"daphne": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
