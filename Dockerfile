# kvprep: the app image. The grader's sandbox runs submissions as unprivileged uids with
# no network; inside a container it uses what the container allows (see the start-up log).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    PIP_NO_CACHE_DIR=1 KVPREP_ENVIRONMENT=production

RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm libseccomp2 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /srv/kvprep
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0
COPY . .
# Editable, so the app finds templates/, static/ and questions/ beside its code.
RUN pip install -e . && npm run build && chmod -R a+rX /srv/kvprep /usr/local/lib/python3.11

# Runs as root so the sandbox can drop each submission to its own unprivileged uid;
# the app itself never runs submitted code.
EXPOSE 8000
VOLUME ["/srv/kvprep/var"]
# KVPREP_SECRET_KEY must be provided; DATABASE_URL and REDIS_URL are optional.
# Production mode: Secure cookies and HSTS (serve it behind HTTPS). Behind a reverse proxy set
# KVPREP_FORWARDED_ALLOW_IPS to its address, or X-Forwarded-For is ignored (README).
CMD ["kvprep", "serve", "--host", "0.0.0.0", "--port", "8000"]
