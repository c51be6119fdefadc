#!/usr/bin/env python3
"""Run: OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_fsrs_fit.py

How long a personal FSRS fit takes (app/services/personal_fsrs.py run_fit: reading the log, fsrs's
optimizer, storing), on a made-up learner's log of a few sizes, and how long the request that queues
it takes. On a fresh SQLite file holding the question bank; torch on one thread, as in the fit's child.
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from sqlmodel import Session  # noqa: E402

from app.config import ROOT  # noqa: E402
from app.content.catalog import load_catalog  # noqa: E402
from app.db import make_engine, migrate  # noqa: E402
from app.models import User  # noqa: E402
from app.services import personal_fsrs  # noqa: E402
from app.services.content_sync import sync_bank  # noqa: E402
from tests.services.fsrs_logs import add_review_log  # noqa: E402

SIZES = [(100, 7), (120, 12), (120, 25)]  # (cards, reviews per card)


def main() -> None:
    torch.set_num_threads(1)
    bank = load_catalog(ROOT / "questions").bank
    for cards, per_card in SIZES:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{folder}/bench.sqlite3"
            migrate(url)
            engine = make_engine(url)
            with Session(engine) as session:
                sync_bank(session=session, bank=bank)
                user = User(email="bench@example.com")
                session.add(user)
                session.commit()
                assert user.id is not None
                after = add_review_log(session, user.id, cards=cards, reviews_per_card=per_card)
                started = time.perf_counter()
                fit = personal_fsrs.request_fit(session=session, user=user, now=after)
                request_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            done = personal_fsrs.run_fit(engine, fit.id)
            total = time.perf_counter() - started
            engine.dispose()
            assert done is not None and done.status == "done", done
            print(
                f"{cards * per_card:5d} reviews ({done.reviews} counted): fit {total:5.1f} s "
                f"(optimizer {done.seconds:5.1f} s); queueing request {request_ms:5.1f} ms"
            )


if __name__ == "__main__":
    main()
