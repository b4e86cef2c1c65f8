"""Internal: setting ``response_template`` in a model folder's ``tokenizer_config.json``.

The file is edited as text: the ``response_template`` member is replaced (or added after the last member)
and every other byte stays as it was, so numbers, escapes, duplicate keys and the layout of every other key
come back exactly as they were. The file is read by a tokenizer of our own (:func:`.jsontext.scan`), which
decodes nothing but the top-level keys.

The new text is written to an anonymous file of the folder (``O_TMPFILE``, Linux) and given a name only to
be moved over the old file, so an export that is killed leaves nothing behind; elsewhere it is a named
``.tokenizer_config.XXXXXXXX.tmp`` file. The writer holds a lock (``flock``) on its file while it exists;
the next export removes every such file nobody holds (one a killed export left), and only those.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ResponseTemplateError
from .jsontext import Layout, Member, Members, NotJSON, dumps, scan

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["CONFIG_NAME", "KEY", "ModelFolderError", "set_response_template"]

CONFIG_NAME = "tokenizer_config.json"
KEY = "response_template"

#: Temporary files of an export into the folder: ours, and the ``tempfile.mkstemp`` names of earlier
#: versions of the library.
_TEMP = re.compile(r"\.tokenizer_config\.[A-Za-z0-9_]{8}\.tmp")
#: Without ``flock`` (not POSIX), a temporary file is taken for a leftover once it is this old.
_STALE_SECONDS = 3600.0


class ModelFolderError(ResponseTemplateError):
    """A model folder that :func:`update_tokenizer_config` cannot update (no or a bad tokenizer_config.json)."""


# ------------------------------------------------------------------------------------ the new text


def _line_indent(text: str, pos: int) -> str:
    """The whitespace that starts the line holding offset ``pos`` (empty if the line starts otherwise)."""
    start = text.rfind("\n", 0, pos) + 1
    lead = text[start:pos]
    return lead if not lead.strip(" \t") else ""


def _layout(text: str, tree: Members, member: Member, colon: str) -> Layout:
    """The layout of a value written for ``member`` (the last member, for a new one): on lines indented as
    the file's when the members are one a line, else on one line as the file writes them."""
    lead = member.lead
    if "\n" not in lead:
        item = ", " if colon.endswith(" ") else ","
        second = tree.members[1].lead if len(tree.members) > 1 else None
        if second is not None and "\n" not in second:
            item = "," + second
        return Layout(unit=None, item=item, colon=colon)
    newline = "\r\n" if "\r\n" in lead else "\n"
    indent = lead[lead.rfind("\n") + 1 :]
    base = _line_indent(text, tree.open_brace)
    unit = indent[len(base) :] if indent.startswith(base) and len(indent) > len(base) else indent
    return Layout(unit=unit or "  ", newline=newline, prefix=indent, colon=colon)


def _colon(member: Member) -> str:
    """How the file writes the colon of ``member`` (``": "`` when it spans lines)."""
    return member.colon if "\n" not in member.colon and "\r" not in member.colon else ": "


def _edit(text: str, tree: Members, template: Mapping[str, Any]) -> tuple[str, int]:
    """``text`` (the object ``tree`` describes) with its ``response_template`` member(s) set to
    ``template``; and how many such members the object had."""
    found = [m for m in tree.members if m.key == KEY]
    if found:
        out = text
        for member in reversed(found):
            value = dumps(template, _layout(text, tree, member, _colon(member)))
            out = out[: member.value_start] + value + out[member.value_end :]
        return out, len(found)
    if not tree.members:
        inside = text[tree.open_brace + 1 : tree.close_brace]
        newline = "\r\n" if "\r\n" in text else "\n"
        value = dumps(template, Layout(prefix="  ", newline=newline))
        after = inside if "\n" in inside else inside + newline  # its whitespace kept, before the "}"
        member_text = f'{newline}  "{KEY}": {value}{after}'
        return text[: tree.open_brace + 1] + member_text + text[tree.close_brace :], 0
    last = tree.members[-1]
    colon = _colon(last)
    layout = _layout(text, tree, last, colon)
    lead = last.lead if layout.unit is not None else layout.item[1:]
    member_text = f',{lead}"{KEY}"{colon}{dumps(template, layout)}'
    return text[: last.value_end] + member_text + text[last.value_end :], 0


# ----------------------------------------------------------------------------------- writing it


def _temp_name(target: Path) -> Path:
    return target.with_name(f".tokenizer_config.{secrets.token_hex(4)}.tmp")


def _lock(fd: int) -> None:
    """Hold ``fd``'s file for this writer (until ``fd`` is closed or the process dies)."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)


def _same_file(fd: int, name: str | Path) -> bool:
    try:
        mine, named = os.fstat(fd), os.stat(name, follow_symlinks=False)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino)


def _remove_leftovers(folder: Path) -> int:
    """Remove the temporary files of exports into ``folder`` that no live export holds; how many."""
    removed = 0
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not _TEMP.fullmatch(entry.name) or not entry.is_file(follow_symlinks=False):
                continue
            try:
                fd = os.open(entry.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if fcntl is not None:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except OSError:
                        continue  # a live export is writing it
                elif time.time() - os.fstat(fd).st_mtime < _STALE_SECONDS:
                    continue
                if _same_file(fd, entry.path):
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue
            finally:
                os.close(fd)
    return removed


def _fill(fd: int, data: bytes, like: os.stat_result) -> bool:
    """Write ``data`` to ``fd`` and give it the owner (where allowed) and mode of ``like``; sync it. Whether
    the owner and group could be kept."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    kept = True
    if hasattr(os, "fchown"):
        try:
            os.fchown(fd, like.st_uid, like.st_gid)
        except PermissionError:
            kept = False
            with contextlib.suppress(PermissionError):
                os.fchown(fd, -1, like.st_gid)  # the group alone, where the user belongs to it
    os.chmod(fd, like.st_mode & 0o7777)
    os.fsync(fd)
    return kept


def _anonymous(folder: Path) -> int | None:
    """An anonymous file in ``folder``, locked, or None where there are none (not Linux, or a file system
    without ``O_TMPFILE``)."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fd = os.open(folder, flag | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOTDIR, errno.ENOENT):
            return None
        raise
    _lock(fd)
    return fd


def _named(target: Path) -> tuple[int, Path]:
    """A new ``.tokenizer_config.XXXXXXXX.tmp`` file next to ``target``, locked."""
    while True:
        tmp = _temp_name(target)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        _lock(fd)
        if _same_file(fd, tmp):
            return fd, tmp
        os.close(fd)  # another export took it for a leftover before we held it: start again


def _replace(target: Path, data: bytes, like: os.stat_result) -> bool:
    """Replace ``target`` (a link: the link itself) by a file holding ``data``, atomically; nothing is left
    behind on failure. Whether the owner and group of ``like`` could be kept."""
    folder = target.parent
    fd = _anonymous(folder)
    tmp: Path | None = None
    kept = True
    try:
        if fd is not None:
            kept = _fill(fd, data, like)
            while tmp is None:
                name = _temp_name(target)
                try:
                    os.link(f"/proc/self/fd/{fd}", name)
                    tmp = name
                except FileExistsError:
                    continue
                except OSError:
                    os.close(fd)
                    fd = None
                    break
        if fd is None:
            fd, tmp = _named(target)
            kept = _fill(fd, data, like)
        assert tmp is not None
        os.replace(tmp, target)
        tmp = None
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        if fd is not None:
            os.close(fd)
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return kept


def set_response_template(
    model_dir: str | os.PathLike[str], template: Mapping[str, Any], notes: list[str] | None = None
) -> Path:
    """See :func:`response_templates.export.update_tokenizer_config`."""
    folder = Path(model_dir)
    path = folder / CONFIG_NAME
    if not folder.is_dir():
        raise ModelFolderError(f"{str(folder)!r} is not a folder")
    link = os.readlink(path) if path.is_symlink() else None
    if link is not None and not path.exists():
        raise ModelFolderError(f"{str(path)!r} is a link to {link!r}, which does not exist (a broken link)")
    if not path.is_file():
        raise ModelFolderError(
            f"{str(folder)!r} has no {CONFIG_NAME}: pass the folder of a model's tokenizer (the one "
            "save_pretrained writes), or write the template to a file instead"
        )
    try:
        raw = path.read_bytes()
        like = os.stat(path)  # a link's target: its mode and owner are the file's
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"cannot read {str(path)!r}: {exc}") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    try:
        tree = scan(body, python_constants=True)  # read as the targets read it
    except NotJSON as exc:
        raise ModelFolderError(f"{str(path)!r} is not valid JSON: {exc}") from None
    if not tree.is_object:
        raise ModelFolderError(f"{str(path)!r} does not hold a JSON object")
    try:
        new_body, count = _edit(body, tree, template)
    except (ValueError, TypeError) as exc:
        raise ResponseTemplateError(f"the template cannot be written as JSON: {exc}") from None
    keys = [m.key for m in tree.members] + ([] if count else [KEY])
    if [m.key for m in scan(new_body, python_constants=True).members] != keys:  # pragma: no cover
        raise ModelFolderError(f"{str(path)!r} cannot be edited in place: its keys would change")
    removed = _remove_leftovers(folder)
    owner_kept = _replace(path, (bom + new_body).encode("utf-8"), like)
    if notes is not None:
        if link is not None:
            notes.append(
                f"{str(path)!r} was a link to {link!r}: it is now a file of its own with the new text, and "
                "the file it linked to is unchanged (in the Hub cache, that blob is shared by other "
                "snapshots and named by its content)"
            )
        elif like.st_nlink > 1:
            notes.append(f"{str(path)!r} had {like.st_nlink - 1} other hard link(s): they keep the old text")
        if not owner_kept:
            notes.append(
                f"the new {CONFIG_NAME} could not keep the owner {like.st_uid}:{like.st_gid} of the old one "
                "(only root may give a file away): it belongs to this user"
            )
        if count > 1:
            notes.append(f"{str(path)!r} has {count} top-level {KEY!r} keys: each now holds the template")
        if removed:
            notes.append(f"removed {removed} temporary file(s) that an interrupted export left in the folder")
    return path
