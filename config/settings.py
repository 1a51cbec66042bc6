"""The one settings module. Everything that differs between a laptop and production comes from the
environment through the typed readers in ``config.env``; nothing else in the code branches on the
environment.

Embedded by default (SQLite, a Celery worker on a file-system broker, in-memory channel layer);
real engines when ``DATABASE_URL`` / ``REDIS_URL`` are set.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_json, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("DESK_DATA_DIR", str(BASE_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

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
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "trading",
    "agents",
    "reviews",
    "research",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.DeskLoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "desk.sqlite3",
            # The worker is another process: WAL lets it read while the web server writes, and
            # IMMEDIATE transactions take the write lock up front instead of failing mid-way.
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
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
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# --- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": env_int("API_PAGE_SIZE", 100, minimum=1),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
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

# --- Channels -----------------------------------------------------------------------------------
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
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
    # After the close (desk time zone): fill next-open orders, exit by stop/target/horizon, mark the rest.
    "mark-positions": {"task": "trading.mark_positions", "schedule": crontab(hour=16, minute=30, day_of_week="1-5")},
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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"daphne": {"level": "WARNING"}},
}
