"""The workspace: uploads kept on the server so that a link reopens them for anyone.

"Keep on the server" stores an upload's bytes once per content (``blobs/<BLAKE2b-256>``)
and gives it an id of 128 random bits (``secrets.token_hex(16)``); the link carries the id,
never the content's digest or the file name. Each keep gets its own id (two people
keeping the same file share the bytes on disk, not the link), and deleting an id removes
the bytes when no other id uses them.

What an id means lives twice: in ``ids/<id>.json`` (written first, atomically) and in the
SQLite index ``index.sqlite3`` (stdlib ``sqlite3``, WAL mode), which answers lookups,
expiry and the quota. The JSON files are the record: a corrupted or missing index is
moved aside and rebuilt from them (:meth:`Workspace.rebuild_index`). Every file is written
to a temporary name in its folder and renamed, so a full disk or a crash leaves no half
file under a real name; changes that touch the bytes run inside one ``BEGIN IMMEDIATE``
transaction, so a keep and a delete of the same content never interleave.

There is no listing: an unknown, malformed or expired id gets the same "not found".
Expired ids (retention, default 7 days) are deleted from disk whenever the workspace is
opened or written to.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sqlite3
import tempfile
import time
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import calcore

__all__ = [
    "WORKSPACE_ENV",
    "DEFAULT_QUOTA_MB",
    "DEFAULT_RETENTION_DAYS",
    "Kept",
    "Workspace",
    "workspace_from_env",
]

WORKSPACE_DIR_ENV = "CALCORE_WORKSPACE_DIR"
RETENTION_ENV = "CALCORE_WORKSPACE_DAYS"
QUOTA_ENV = "CALCORE_WORKSPACE_QUOTA_MB"
#: The environment variables of a workspace: directory, retention (days), quota (MB).
WORKSPACE_ENV = (WORKSPACE_DIR_ENV, RETENTION_ENV, QUOTA_ENV)
DEFAULT_RETENTION_DAYS = 7
DEFAULT_QUOTA_MB = 5_000
_ID = re.compile(r"[0-9a-f]{32}")
NOT_FOUND = (
    "This link's kept file was not found on the server (it may have expired or been deleted)."
)


@dataclass(frozen=True)
class Kept:
    """One kept upload: its id (the link's), file name (untrusted), size and times."""

    id: str
    name: str
    digest: str
    size: int
    created: float
    expires: float


class Workspace:
    """Kept uploads in ``root``, indexed in SQLite.

    Parameters
    ----------
    root : str or Path
        Created if missing.
    retention_days : float, default 7
        How long a kept file stays.
    quota_mb : float, default 5,000
        Bytes (in MB) the kept files may take in all.

    Examples
    --------
    >>> import tempfile
    >>> ws = Workspace(tempfile.mkdtemp())
    >>> kept = ws.keep(b"label,p\\n1,0.5\\n", "preds.csv")
    >>> len(kept.id), ws.open(kept.id)[0].name, ws.open(kept.id)[1]
    (32, 'preds.csv', b'label,p\\n1,0.5\\n')
    >>> ws.delete(kept.id); ws.open(kept.id)
    Traceback (most recent call last):
    ...
    calcore._errors.CalcoreError: This link's kept file was not found on the server ...
    """

    def __init__(self, root, *, retention_days: float = DEFAULT_RETENTION_DAYS,
                 quota_mb: float = DEFAULT_QUOTA_MB) -> None:  # fmt: skip
        self.root = Path(root)
        self.retention_s = float(retention_days) * 86_400
        self.quota_bytes = int(float(quota_mb) * 1_000_000)
        for sub in ("blobs", "ids"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.index = self.root / "index.sqlite3"
        self._ensure_index()
        self._purged = 0.0
        self.purge()

    # -- the index ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.index, timeout=30, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _ensure_index(self) -> None:
        if not self.index.exists():  # first start, or an index deleted: from the records
            self.rebuild_index()
            return
        try:
            with closing(self._connect()) as db:
                if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                    raise sqlite3.DatabaseError("quick_check failed")
                db.executescript(_SCHEMA)
        except sqlite3.DatabaseError:
            self.rebuild_index()

    def rebuild_index(self) -> int:
        """Move a damaged index aside and rebuild it from ``ids/*.json``; the rows restored."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            path = Path(f"{self.index}{suffix}")
            if path.exists():
                os.replace(path, f"{path}.damaged-{stamp}")
        rows = []
        for record in (self.root / "ids").glob("*.json"):
            try:
                k = Kept(**json.loads(record.read_text(encoding="utf-8")))
            except (ValueError, TypeError):
                continue  # a record cut short by a crash: its id is lost, its bytes purged
            if _ID.fullmatch(k.id) and (self.root / "blobs" / k.digest).exists():
                rows.append(k)
        with closing(self._connect()) as db:
            db.executescript(_SCHEMA)
            db.executemany(
                "INSERT INTO kept VALUES (?, ?, ?, ?, ?, ?)",
                [(k.id, k.name, k.digest, k.size, k.created, k.expires) for k in rows],
            )
        return len(rows)

    @contextmanager
    def _writing(self):
        """One write transaction (``BEGIN IMMEDIATE``: other writers wait for it)."""
        with closing(self._connect()) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    # -- keeping, opening, deleting ------------------------------------------------------

    def used_bytes(self) -> int:
        """Bytes of the kept files (each content once)."""
        with closing(self._connect()) as db:
            return _used_bytes(db)

    def keep(self, data: bytes, name: str, digest: str | None = None) -> Kept:
        """Keep ``data`` (an upload called ``name``) and return its new id.

        Raises
        ------
        calcore.CalcoreError
            The quota would be exceeded, or the disk is full (nothing is left half-written).
        """
        import hashlib

        self.purge()
        digest = digest or hashlib.blake2b(data, digest_size=32).hexdigest()
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise calcore.CalcoreError("internal: a content digest is 64 hex characters.")
        blob = self.root / "blobs" / digest
        now = time.time()
        kept = Kept(secrets.token_hex(16), str(name)[:255], digest, len(data), now,
                    now + self.retention_s)  # fmt: skip
        tmp_blob = None
        try:
            if not blob.exists():
                tmp_blob = _write_temporary(self.root / "blobs", data)
            record = _write_temporary(self.root / "ids", json.dumps(kept.__dict__).encode())
            with self._writing() as db:
                used = _used_bytes(db)
                shared = db.execute(
                    "SELECT 1 FROM kept WHERE digest = ? LIMIT 1", (digest,)
                ).fetchone()
                if not shared and used + len(data) > self.quota_bytes:
                    os.unlink(record)
                    raise calcore.CalcoreError(
                        f"The server's workspace is full: it holds {used / 1e6:,.0f} MB of "
                        f"{self.quota_bytes / 1e6:,.0f} MB, and this file needs "
                        f"{len(data) / 1e6:,.1f} MB. Delete kept files you no longer need, or "
                        "ask the server's operator to raise CALCORE_WORKSPACE_QUOTA_MB."
                    )
                if not blob.exists():
                    if tmp_blob is None:  # deleted since we looked: write it again
                        tmp_blob = _write_temporary(self.root / "blobs", data)
                    os.replace(tmp_blob, blob)
                    tmp_blob = None
                os.replace(record, self.root / "ids" / f"{kept.id}.json")
                db.execute(
                    "INSERT INTO kept VALUES (?, ?, ?, ?, ?, ?)",
                    (kept.id, kept.name, digest, kept.size, kept.created, kept.expires),
                )
        except OSError as err:
            raise calcore.CalcoreError(
                f"Could not keep {str(name)[:80]!r} on the server ({err.strerror or err}); "
                "nothing was stored. The page works on the upload as usual."
            ) from None
        finally:
            if tmp_blob is not None and os.path.exists(tmp_blob):
                os.unlink(tmp_blob)
        return kept

    def lookup(self, kept_id: str) -> Kept:
        """The kept upload of ``kept_id``.

        Raises
        ------
        calcore.CalcoreError
            The same :data:`NOT_FOUND` for a malformed, unknown or expired id.
        """
        if not isinstance(kept_id, str) or not _ID.fullmatch(kept_id):
            raise calcore.CalcoreError(NOT_FOUND)
        with closing(self._connect()) as db:
            row = db.execute("SELECT * FROM kept WHERE id = ?", (kept_id,)).fetchone()
        if row is None:
            raise calcore.CalcoreError(NOT_FOUND)
        kept = Kept(*row)
        if kept.expires <= time.time() or not (self.root / "blobs" / kept.digest).exists():
            self.purge()
            raise calcore.CalcoreError(NOT_FOUND)
        return kept

    def open(self, kept_id: str) -> tuple[Kept, bytes]:
        """The kept upload and its bytes (see :meth:`lookup`)."""
        kept = self.lookup(kept_id)
        try:
            return kept, (self.root / "blobs" / kept.digest).read_bytes()
        except FileNotFoundError:  # deleted in between
            raise calcore.CalcoreError(NOT_FOUND) from None

    def delete(self, kept_id: str) -> None:
        """Forget ``kept_id``; its bytes go when no other id uses them. Unknown: a no-op."""
        if not isinstance(kept_id, str) or not _ID.fullmatch(kept_id):
            return
        with self._writing() as db:
            row = db.execute("SELECT digest FROM kept WHERE id = ?", (kept_id,)).fetchone()
            db.execute("DELETE FROM kept WHERE id = ?", (kept_id,))
            _unlink(self.root / "ids" / f"{kept_id}.json")
            if row is not None:
                self._drop_unused(db, row[0])

    def purge_now_and_then(self) -> None:
        """:meth:`purge`, at most once a minute (a page opens the workspace on every rerun)."""
        if time.monotonic() - self._purged > 60:
            self.purge()

    def purge(self) -> int:
        """Delete expired ids, their unused bytes and stray temporary files; ids deleted."""
        self._purged = time.monotonic()
        now = time.time()
        with self._writing() as db:
            gone = db.execute("SELECT id, digest FROM kept WHERE expires <= ?", (now,)).fetchall()
            db.execute("DELETE FROM kept WHERE expires <= ?", (now,))
            for kept_id, digest in gone:
                _unlink(self.root / "ids" / f"{kept_id}.json")
                self._drop_unused(db, digest)
            used = {d for (d,) in db.execute("SELECT DISTINCT digest FROM kept")}
            for folder in ("blobs", "ids"):
                for path in (self.root / folder).iterdir():
                    if path.name.startswith(".tmp-"):  # left by a crash or a full disk
                        if now - path.stat().st_mtime > 3600:
                            _unlink(path)
                    elif folder == "blobs" and path.name not in used:
                        _unlink(path)
        return len(gone)

    def _drop_unused(self, db, digest: str) -> None:
        """Delete the bytes of ``digest`` when no id uses them (inside a write transaction)."""
        if not db.execute("SELECT 1 FROM kept WHERE digest = ? LIMIT 1", (digest,)).fetchone():
            _unlink(self.root / "blobs" / digest)


def workspace_from_env(environ=None) -> Workspace | None:
    """The workspace named by ``CALCORE_WORKSPACE_DIR`` (None when unset), with the
    retention and quota of ``CALCORE_WORKSPACE_DAYS`` and ``CALCORE_WORKSPACE_QUOTA_MB``.

    Raises
    ------
    calcore.CalcoreError
        A setting that is not a positive number, or a directory that cannot be created.
    """
    env = os.environ if environ is None else environ
    root = env.get(WORKSPACE_DIR_ENV, "").strip()
    if not root:
        return None
    numbers = {}
    for var, default in ((RETENTION_ENV, DEFAULT_RETENTION_DAYS), (QUOTA_ENV, DEFAULT_QUOTA_MB)):
        text = env.get(var, "").strip() or str(default)
        try:
            numbers[var] = float(text)
        except ValueError:
            numbers[var] = -1.0
        if not numbers[var] > 0:
            raise calcore.CalcoreError(f"{var}={text[:40]!r} must be a positive number.")
    try:
        return Workspace(root, retention_days=numbers[RETENTION_ENV], quota_mb=numbers[QUOTA_ENV])
    except OSError as err:
        raise calcore.CalcoreError(
            f"{WORKSPACE_DIR_ENV}: the workspace cannot be used ({err.strerror or err})."
        ) from None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS kept (id TEXT PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL,
                                 size INTEGER NOT NULL, created REAL NOT NULL,
                                 expires REAL NOT NULL);
CREATE INDEX IF NOT EXISTS kept_digest ON kept (digest);
CREATE INDEX IF NOT EXISTS kept_expires ON kept (expires);
"""


def _used_bytes(db) -> int:
    """Bytes of the kept files, each content once."""
    sql = "SELECT coalesce(sum(size), 0) FROM (SELECT DISTINCT digest, size FROM kept)"
    return int(db.execute(sql).fetchone()[0])


def _write_temporary(folder: Path, data: bytes) -> str:
    """``data`` in a new temporary file of ``folder`` (flushed to disk); its path."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _unlink(Path(tmp))
        raise
    return tmp


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
