"""bench/saferead.open_archive: an archive's members read in memory, never unpacked; a link,
folder, device, absolute or `..` name refused in one line, a member over its cap refused, and the
archive itself opened as any file is (a symlink to it refused)."""
from __future__ import annotations

import io
import tarfile

import pytest

from bench import safeio, saferead


def _archive(path, members):
    with safeio.atomic(path) as f, tarfile.open(fileobj=f, mode="w:gz") as tar:
        for ti, data in members:
            tar.addfile(ti, io.BytesIO(data) if data is not None else None)


def _reg(name, data=b"x\n"):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    return ti, data


def _of(name, kind, target=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.linkname = kind, target
    return ti, None


def test_members_are_read_and_the_unsafe_ones_refused(tmp_path):
    p = tmp_path / "day.tar.gz"
    _archive(p, [_of("day", tarfile.DIRTYPE), _reg("day/samples/a.csv", b"h,v\n1,2\n"),
                 _of("day/samples/l.csv", tarfile.SYMTYPE, "/etc/passwd"),
                 _of("day/samples/h.csv", tarfile.LNKTYPE, "day/samples/a.csv"),
                 _of("day/fifo", tarfile.FIFOTYPE), _reg("/abs.csv"), _reg("day/../up.csv"),
                 _reg("day/big.json", b"[" + b" " * 100 + b"]")])
    with saferead.open_archive(p) as ar:
        assert ar.names() == ["day/samples/a.csv", "day/big.json"]
        f = ar.member("day/samples/a.csv")
        assert f is not None
        with f:
            assert list(saferead.csv_rows_of(f)) == [{"h": "1", "v": "2"}]
        assert ar.member("day/samples/none.csv") is None
        for name, why in (("day/samples/l.csv", "a link"), ("day/samples/h.csv", "a link"),
                          ("day", "a folder"), ("day/fifo", "not a regular file"),
                          ("/abs.csv", "plain relative"), ("day/../up.csv", "plain relative")):
            with pytest.raises(saferead.FileFault, match=why):
                ar.member(name)
        with pytest.raises(saferead.FileFault, match="cap"):
            ar.read_bytes("day/big.json", cap=10)
        assert ar.read_bytes("day/big.json") == b"[" + b" " * 100 + b"]"


def test_a_symlinked_or_broken_archive_is_refused_in_one_line(tmp_path):
    p = tmp_path / "day.tar.gz"
    _archive(p, [_reg("day/a.csv")])
    (tmp_path / "link.tar.gz").symlink_to(p)
    with pytest.raises(saferead.FileFault, match="symlink"):
        with saferead.open_archive(tmp_path / "link.tar.gz"):
            pass
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(p.read_bytes()[:20])
    with pytest.raises(saferead.FileFault, match="cut.tar.gz"):
        with saferead.open_archive(cut) as ar:
            ar.names()
