"""The ctypes mirrors of attnc_c.h's records come from the library's own
table of their fields (attnc_record_fields), checked against ctypes' layout."""

import ctypes

import pytest

from attnc import _capi


def library_records():
    names, index = [], 0
    while True:
        name = _capi.lib.attnc_record_name(index).decode()
        if not name:
            return names
        names.append(name)
        index += 1


def test_every_record_of_the_library_has_its_mirror():
    mirrors = {cls.__name__ for cls in (
        _capi.VariantSpec, _capi.TensorSpec, _capi.Batch, _capi.Limits,
        _capi.KVPoolConfig, _capi.SchedulerConfig, _capi.Request,
        _capi.Sample, _capi.StepInfo, _capi.SchedulerStats)}
    assert set(library_records()) == mirrors
    assert len(mirrors) == 10


@pytest.mark.parametrize("record", library_records())
def test_each_mirror_has_the_librarys_offsets_and_size(record):
    count, size = ctypes.c_int(), ctypes.c_int64()
    fields = _capi.lib.attnc_record_fields(record.encode(),
                                           ctypes.byref(count),
                                           ctypes.byref(size))
    mirror = _capi._record(_capi.lib, record)
    assert ctypes.sizeof(mirror) == size.value > 0
    assert [name for name, _ in mirror._fields_] == [
        fields[i].name.decode() for i in range(count.value)]
    for i in range(count.value):
        laid = getattr(mirror, fields[i].name.decode())
        assert (laid.offset, laid.size) == (fields[i].offset, fields[i].size)


def test_a_layout_ctypes_would_get_wrong_is_refused_at_import():
    # As if ctypes had a narrower int64: every later offset would be off.
    narrow = list(_capi._KIND_TYPES)
    narrow[1] = ctypes.c_int32
    with pytest.raises(ImportError, match=r"attnc_batch\.\w+ out at offset"):
        _capi._record(_capi.lib, "attnc_batch", kind_types=narrow)


def test_an_unknown_record_is_refused_by_name():
    with pytest.raises(ImportError, match="no record attnc_nothing"):
        _capi._record(_capi.lib, "attnc_nothing")
    count = ctypes.c_int(7)
    assert not _capi.lib.attnc_record_fields(b"attnc_nothing",
                                             ctypes.byref(count), None)
    assert count.value == 0


def all_fields():
    for record in library_records():
        for field in _capi._record(_capi.lib, record).fields:
            yield record, field


def test_every_enum_field_names_an_enum_the_library_names():
    enums = {(record, field.name): field.enum_type
             for record, field in all_fields()
             if field.encoding == _capi.ENCODING_ENUM}
    assert enums[("attnc_variant_spec", "kv_dtype")] == "attnc_dtype"
    assert enums[("attnc_kv_pool_config", "memory")] == "attnc_kv_memory"
    for (record, name), enum_type in enums.items():
        assert _capi.enum_names(enum_type), f"{record}.{name}: {enum_type}"


def test_counts_name_the_array_they_count():
    counts = {(record, field.name): field.counts
              for record, field in all_fields()
              if field.encoding == _capi.ENCODING_COUNT}
    assert counts == {("attnc_variant_spec", "num_captures"): "capture_types"}
    spec = {field.name: field for field in _capi.VariantSpec.fields}
    assert spec["capture_types"].kind == _capi.KIND_STRINGS


def test_only_fields_with_a_sentinel_have_none():
    spec = {field.name: field.none for field in _capi.VariantSpec.fields}
    assert spec["kv_dtype"] == -1
    assert spec["window_left"] == spec["window_right"] == -1
    assert spec["scale"] == spec["softcap"] == spec["score_mod"] == 0
    assert spec["name"] is spec["query_heads"] is _capi.NO_NONE
