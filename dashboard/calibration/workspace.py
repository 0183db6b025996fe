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
transaction, so a keep and a delete of the same content never interleave. A keep that
fails at any step (a full disk may stop a file write, a rename or SQLite) removes what
it placed before it lets the transaction go: no bytes, record or row is left.

Nothing a crash leaves lasts: a temporary file whose writer is gone (its lock released,
e.g. ``kill -9``) is swept when the workspace is opened and at every purge; a damaged
index moved aside and a record refused by the rebuild (a digest that is not 64 hex
characters would name a file outside ``blobs/``) are kept a day for the operator, and of
damaged indexes only the newest.

There is no listing: an unknown, malformed or expired id gets the same "not found".
Expired ids (retention, default 7 days) are deleted from disk whenever the workspace is
opened or written to.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import numbers
import os
import re
import secrets
import sqlite3
import tempfile
import time
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import calcore
from dashboard.calibration.datadir import human_size

try:  # a temporary file's writer holds a lock on it, so a sweep knows it is alive
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS: temporaries swept by age
    fcntl = None

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
_DIGEST = re.compile(r"[0-9a-f]{64}")
#: A temporary file no live writer holds is swept once it is this old (seconds): the
#: moment between its creation and its writer's lock, with a wide margin.
TEMPORARY_GRACE_S = 10.0
#: Without file locks (not Linux or macOS), a temporary file is swept at this age.
TEMPORARY_UNLOCKED_AGE_S = 3600.0
#: Files moved aside (a damaged index, a refused record) are kept this long for the
#: operator to look at, then deleted; of damaged indexes only the newest is kept at all.
DAMAGED_KEEP_S = 86_400.0
_DAMAGED = re.compile(r".*\.damaged-(\d{8}T\d{6})")
_STAMP = "%Y%m%dT%H%M%S"
NOT_FOUND = (
    "This link's kept file was not found on the server (it may have expired or been deleted)."
)


@dataclass(frozen=True)
class Kept:
    """One kept upload: its id (the link's), file name (untrusted), size and times.

    ``delete_hash`` is the SHA-256 of its delete code (None for files kept before delete
    codes). ``delete_code`` itself is stored nowhere: only the :class:`Kept` that
    :meth:`Workspace.keep` returns to the uploader holds it.
    """

    id: str
    name: str
    digest: str
    size: int
    created: float
    expires: float
    delete_hash: str | None = None
    delete_code: str | None = field(default=None, repr=False, compare=False)

    def record(self) -> dict:
        """What the id's JSON record and index row hold (never the delete code)."""
        return {k: v for k, v in self.__dict__.items() if k != "delete_code"}


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
    calcore.foundation.errors.CalcoreError: This link's kept file was not found on the server ...
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
        self.sweep_damaged()

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
                columns = {row[1] for row in db.execute("PRAGMA table_info(kept)")}
                if "delete_hash" not in columns:  # an index from before delete codes
                    db.execute("ALTER TABLE kept ADD COLUMN delete_hash TEXT")
        except sqlite3.DatabaseError:
            self.rebuild_index()

    def rebuild_index(self) -> int:
        """Move a damaged index aside and rebuild it from ``ids/*.json``; the rows restored.

        A record is trusted only as far as it is checked: its id must be its file's name
        and a 32-hex id, its digest 64 hex characters (a digest is a file name under
        ``blobs/``: ``../../victim.txt`` would serve and later delete any file), its other
        fields of their types. A record that fails is moved aside (``*.damaged-<time>``,
        deleted after :data:`DAMAGED_KEEP_S`); a record whose bytes are gone is skipped.
        """
        stamp = time.strftime(_STAMP)
        for suffix in ("", "-wal", "-shm"):
            path = Path(f"{self.index}{suffix}")
            if path.exists():
                os.replace(path, f"{path}.damaged-{stamp}")
        rows = []
        for record in (self.root / "ids").glob("*.json"):
            kept = _checked_record(record)
            if kept is None:  # cut short by a crash, or tampered with: its id is lost
                os.replace(record, f"{record}.damaged-{stamp}")
            elif self._blob(kept.digest).is_file():
                rows.append(kept)
        with closing(self._connect()) as db:
            db.executescript(_SCHEMA)
            db.executemany(_INSERT, [tuple(k.record().values()) for k in rows])
        return len(rows)

    def sweep_damaged(self, *, now: float | None = None) -> int:
        """Delete what was moved aside (damaged indexes, refused records) once older than
        :data:`DAMAGED_KEEP_S`, and every damaged index but the newest; files deleted."""
        now = time.time() if now is None else now
        aside = [
            (path, match.group(1))
            for folder in (self.root, self.root / "ids")
            for path in folder.iterdir()
            if (match := _DAMAGED.fullmatch(path.name))
        ]
        newest_index = max((s for p, s in aside if p.parent == self.root), default=None)
        deleted = 0
        for path, stamp in aside:
            try:
                age = now - time.mktime(time.strptime(stamp, _STAMP))
            except ValueError:  # not a time this workspace wrote
                age = float("inf")
            if age > DAMAGED_KEEP_S or (path.parent == self.root and stamp != newest_index):
                _unlink(path)
                deleted += 1
        return deleted

    def _blob(self, digest: str) -> Path:
        """The path of the bytes of ``digest``, which must be a BLAKE2b-256 hex digest (the
        index and the records are files on disk: never a path from them unchecked)."""
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise calcore.CalcoreError(NOT_FOUND)
        return self.root / "blobs" / digest

    @contextmanager
    def _writing(self):
        """One write transaction (``BEGIN IMMEDIATE``: other writers wait for it)."""
        with closing(self._connect()) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                _rollback(db)
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
            The quota would be exceeded, or a write failed (a full disk: ``OSError`` or a
            SQLite error, at any step): everything this keep wrote is removed again (the
            bytes, the id's record, the index row), so nothing is left.
        """
        digest = digest or hashlib.blake2b(data, digest_size=32).hexdigest()
        if not _DIGEST.fullmatch(digest):
            raise calcore.CalcoreError("internal: a content digest is 64 hex characters.")
        now = time.time()
        code = secrets.token_urlsafe(12)  # 96 bits; the uploader's, kept nowhere here
        kept = Kept(secrets.token_hex(16), str(name)[:255], digest, len(data), now,
                    now + self.retention_s, _hash_of(code), code)  # fmt: skip
        try:
            self.purge()
            with contextlib.ExitStack() as temporaries:
                self._keep(kept, data, temporaries)
        except (OSError, sqlite3.Error) as err:
            reason = getattr(err, "strerror", None) or str(err)
            raise calcore.CalcoreError(
                f"Could not keep {str(name)[:80]!r} on the server ({reason}); nothing was "
                "stored. The page works on the upload as usual."
            ) from None
        return kept

    def _keep(self, kept: Kept, data: bytes, temporaries: contextlib.ExitStack) -> None:
        """The steps of :meth:`keep`; on any failure, the files it placed are removed
        while it still holds the index's write lock (no other keep can have begun to
        share them), then the transaction is rolled back."""
        blob = self._blob(kept.digest)
        record = self.root / "ids" / f"{kept.id}.json"
        tmp_blob = None
        if not blob.exists():
            tmp_blob = temporaries.enter_context(_temporary(self.root / "blobs", data))
        tmp_record = temporaries.enter_context(
            _temporary(self.root / "ids", json.dumps(kept.record()).encode())
        )
        placed = []
        with closing(self._connect()) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                used = _used_bytes(db)
                shared = db.execute(
                    "SELECT 1 FROM kept WHERE digest = ? LIMIT 1", (kept.digest,)
                ).fetchone()
                if not shared and used + len(data) > self.quota_bytes:
                    raise calcore.CalcoreError(_quota_message(used, self.quota_bytes, len(data)))
                if not blob.exists():
                    if tmp_blob is None:  # deleted since we looked: write it again
                        tmp_blob = temporaries.enter_context(_temporary(self.root / "blobs", data))
                    os.replace(tmp_blob, blob)
                    placed.append(blob)
                os.replace(tmp_record, record)
                placed.append(record)
                db.execute(_INSERT, tuple(kept.record().values()))
                db.execute("COMMIT")
            except BaseException:
                for path in placed:
                    _unlink(path)
                _rollback(db)
                raise

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
        record = self.root / "ids" / f"{kept_id}.json"
        if kept.expires <= time.time() or not (self._blob(kept.digest).exists()
                                               and record.exists()):  # fmt: skip
            self.purge()
            raise calcore.CalcoreError(NOT_FOUND)
        return kept

    def open(self, kept_id: str) -> tuple[Kept, bytes]:
        """The kept upload and its bytes (see :meth:`lookup`)."""
        kept = self.lookup(kept_id)
        try:
            return kept, self._blob(kept.digest).read_bytes()
        except FileNotFoundError:  # deleted in between
            raise calcore.CalcoreError(NOT_FOUND) from None

    def delete_with_code(self, kept_id: str, code: str) -> None:
        """:meth:`delete`, for whoever holds the file's delete code (its uploader): the
        share link reopens a kept file, it cannot delete it.

        Raises
        ------
        calcore.CalcoreError
            The code is not this file's (nothing is deleted), or the file was kept before
            delete codes (it goes when it expires).
        """
        kept = self.lookup(kept_id)
        if kept.delete_hash is None:
            expires = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(kept.expires))
            raise calcore.CalcoreError(
                f"This file was kept before delete codes existed, so nobody can delete it "
                f"from the page; it is deleted when it expires ({expires})."
            )
        given = _hash_of(code.strip()) if isinstance(code, str) else ""
        if not hmac.compare_digest(given, kept.delete_hash):
            raise calcore.CalcoreError(
                "That is not this file's delete code; nothing was deleted. The code was "
                "shown to the person who kept the file, under the upload."
            )
        self.delete(kept_id)

    def delete(self, kept_id: str) -> None:
        """Forget ``kept_id``; its bytes go when no other id uses them. Unknown: a no-op.
        The server's own deletion (expiry, tests); the page deletes with
        :meth:`delete_with_code`."""
        if not isinstance(kept_id, str) or not _ID.fullmatch(kept_id):
            return
        record = self.root / "ids" / f"{kept_id}.json"
        try:
            with self._writing() as db:
                row = db.execute("SELECT digest FROM kept WHERE id = ?", (kept_id,)).fetchone()
                db.execute("DELETE FROM kept WHERE id = ?", (kept_id,))
                _unlink(record)  # the files go first: on a full disk they make the room
                if row is not None:  # the index needs to record the delete
                    self._drop_unused(db, row[0])
        except (OSError, sqlite3.Error) as err:
            if record.exists():
                reason = getattr(err, "strerror", None) or str(err)
                raise calcore.CalcoreError(
                    f"Could not delete the kept file ({reason}); nothing was deleted. Try again."
                ) from None
            # its record is gone, so the id no longer opens (see lookup); the index row
            # left by the failed commit goes at the next purge

    def purge_now_and_then(self) -> None:
        """:meth:`purge`, at most once a minute (a page opens the workspace on every rerun)."""
        if time.monotonic() - self._purged > 60:
            with contextlib.suppress(OSError, sqlite3.Error):  # e.g. a full disk: next time
                self.purge()

    def purge(self) -> int:
        """Delete expired ids, their unused bytes and stray temporary files; ids deleted.

        A temporary file is stray when no live writer holds its lock (its writer ended,
        e.g. killed with ``kill -9``) and it is older than :data:`TEMPORARY_GRACE_S`: it
        goes at once rather than hold disk space outside the quota.
        """
        self._purged = time.monotonic()
        now = time.time()
        with self._writing() as db:
            gone = db.execute("SELECT id, digest FROM kept WHERE expires <= ?", (now,)).fetchall()
            db.execute("DELETE FROM kept WHERE expires <= ?", (now,))
            for kept_id, digest in gone:
                _unlink(self.root / "ids" / f"{kept_id}.json")
                self._drop_unused(db, digest)
            self._drop_broken_rows(db)
            rows = dict(db.execute("SELECT id, digest FROM kept").fetchall())
            used = set(rows.values())
            for folder in ("blobs", "ids"):
                for path in (self.root / folder).iterdir():
                    if path.name.startswith(".tmp-"):  # left by a crash or a full disk
                        if _abandoned(path, now):
                            _unlink(path)
                    elif folder == "blobs" and path.name not in used:
                        _unlink(path)
                    elif folder == "ids" and path.suffix == ".json" and path.stem not in rows:
                        _unlink(path)  # a record without its row: a keep or delete cut short
        return len(gone)

    def _drop_broken_rows(self, db) -> None:
        """Delete the rows whose record or bytes are gone (a delete whose commit failed on
        a full disk), inside a write transaction: no keep is between its steps then."""
        for kept_id, digest in db.execute("SELECT id, digest FROM kept").fetchall():
            try:
                intact = self._blob(digest).exists()
            except calcore.CalcoreError:  # not a digest: nothing of ours to serve
                intact = False
            if not intact or not (self.root / "ids" / f"{kept_id}.json").exists():
                db.execute("DELETE FROM kept WHERE id = ?", (kept_id,))
                _unlink(self.root / "ids" / f"{kept_id}.json")

    def _drop_unused(self, db, digest: str) -> None:
        """Delete the bytes of ``digest`` when no id uses them (inside a write transaction)."""
        if not db.execute("SELECT 1 FROM kept WHERE digest = ? LIMIT 1", (digest,)).fetchone():
            with contextlib.suppress(calcore.CalcoreError):  # not a digest: no file of ours
                _unlink(self._blob(digest))


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
    except (OSError, sqlite3.Error) as err:  # e.g. a full disk when the index is made
        reason = getattr(err, "strerror", None) or str(err)
        raise calcore.CalcoreError(
            f"{WORKSPACE_DIR_ENV}: the workspace cannot be used ({reason})."
        ) from None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS kept (id TEXT PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL,
                                 size INTEGER NOT NULL, created REAL NOT NULL,
                                 expires REAL NOT NULL, delete_hash TEXT);
CREATE INDEX IF NOT EXISTS kept_digest ON kept (digest);
CREATE INDEX IF NOT EXISTS kept_expires ON kept (expires);
"""


_INSERT = "INSERT INTO kept VALUES (?, ?, ?, ?, ?, ?, ?)"


def _hash_of(code: str) -> str:
    """The SHA-256 (hex) of a delete code, which is all the server keeps of it."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


def _used_bytes(db) -> int:
    """Bytes of the kept files, each content once."""
    sql = "SELECT coalesce(sum(size), 0) FROM (SELECT DISTINCT digest, size FROM kept)"
    return int(db.execute(sql).fetchone()[0])


def _quota_message(used: int, quota: int, needed: int) -> str:
    return (
        f"The server's workspace is full: it holds {human_size(used)} of {human_size(quota)}, "
        f"and this file needs {human_size(needed)}. Delete kept files you no longer need, or "
        "ask the server's operator to raise CALCORE_WORKSPACE_QUOTA_MB."
    )


def _checked_record(path: Path) -> Kept | None:
    """The :class:`Kept` of a record file, or None when it is not one this workspace wrote
    (unreadable, cut short, a field of the wrong type, an id that is not its file name,
    a digest that is not 64 hex characters)."""
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
        kept = Kept(**fields)
    except (OSError, ValueError, TypeError, RecursionError):
        return None
    numbers_ok = all(
        isinstance(v, numbers.Real) and not isinstance(v, bool)
        for v in (kept.size, kept.created, kept.expires)
    )
    hash_ok = kept.delete_hash is None or (
        isinstance(kept.delete_hash, str) and _DIGEST.fullmatch(kept.delete_hash)
    )
    ok = (
        isinstance(kept.id, str) and _ID.fullmatch(kept.id) and path.name == f"{kept.id}.json"
        and isinstance(kept.digest, str) and _DIGEST.fullmatch(kept.digest)
        and isinstance(kept.name, str) and numbers_ok and isinstance(kept.size, int)
        and kept.size >= 0 and hash_ok and kept.delete_code is None
    )  # fmt: skip
    return kept if ok else None


@contextmanager
def _temporary(folder: Path, data: bytes):
    """``data`` in a new temporary file of ``folder`` (flushed to disk), locked while the
    block runs (so that :meth:`Workspace.purge` in any process leaves it alone); its path.
    The file is removed at the end unless it was renamed meanwhile."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file is closed
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            yield tmp
    finally:
        _unlink(Path(tmp))


def _abandoned(path: Path, now: float) -> bool:
    """Whether the temporary file ``path`` has no live writer (see :func:`_temporary`)."""
    try:
        age = now - path.stat().st_mtime
    except FileNotFoundError:
        return False
    if fcntl is None:
        return age > TEMPORARY_UNLOCKED_AGE_S
    if age <= TEMPORARY_GRACE_S:  # maybe created a moment ago, its lock not yet taken
        return False
    try:
        with open(path, "rb") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # a writer holds it
    except FileNotFoundError:
        return False
    return True


def _rollback(db) -> None:
    """Roll back, if a transaction is still open (a failed COMMIT may have ended it)."""
    with contextlib.suppress(sqlite3.Error):
        if db.in_transaction:
            db.execute("ROLLBACK")


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
