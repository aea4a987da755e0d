//===- CRecords.cpp - the layouts of attnc_c.h's records ------------------===//
//
// attnc_record_fields' tables, built from the same ATTNC_<RECORD>_FIELDS
// lists that define the structs in attnc_c.h: a field's offset and size
// come from the compiler, its kind from its C type.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc_c.h"

#include <cstddef>
#include <cstring>
#include <iterator>
#include <type_traits>

namespace {

template <typename T> constexpr attnc_field_kind kindOf() {
  if constexpr (std::is_same_v<T, const char *>)
    return ATTNC_FIELD_STRING;
  else if constexpr (std::is_same_v<T, const char *const *>)
    return ATTNC_FIELD_STRINGS;
  else if constexpr (std::is_same_v<T, const int32_t *>)
    return ATTNC_FIELD_INT32_ARRAY;
  else if constexpr (std::is_same_v<T, const int64_t *>)
    return ATTNC_FIELD_INT64_ARRAY;
  else if constexpr (std::is_same_v<T, float>)
    return ATTNC_FIELD_FLOAT;
  else if constexpr (std::is_same_v<T, double>)
    return ATTNC_FIELD_DOUBLE;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return ATTNC_FIELD_UINT64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return ATTNC_FIELD_INT64;
  else {
    // int, int32_t and the enums, which C gives int's size here.
    static_assert(
        ((std::is_integral_v<T> && std::is_signed_v<T>) || std::is_enum_v<T>) &&
            sizeof(T) == 4,
        "a record field of a type attnc_field_kind cannot name");
    return ATTNC_FIELD_INT32;
  }
}

struct Record {
  const char *name;
  const attnc_field *fields;
  int numFields;
  int64_t size;
};

#define ATTNC_FIELD_ENTRY(type, field)                                         \
  attnc_field{#field, int64_t(offsetof(Self, field)), int64_t(sizeof(type)),   \
              kindOf<type>()},
#define ATTNC_RECORD_TABLE(record, fields)                                     \
  struct record##_table {                                                      \
    using Self = record;                                                       \
    static constexpr attnc_field entries[] = {fields(ATTNC_FIELD_ENTRY)};      \
  };                                                                           \
  static_assert(sizeof(record##_table::entries) > 0);

ATTNC_RECORD_TABLE(attnc_variant_spec, ATTNC_VARIANT_SPEC_FIELDS)
ATTNC_RECORD_TABLE(attnc_tensor_spec, ATTNC_TENSOR_SPEC_FIELDS)
ATTNC_RECORD_TABLE(attnc_batch, ATTNC_BATCH_FIELDS)
ATTNC_RECORD_TABLE(attnc_limits, ATTNC_LIMITS_FIELDS)
ATTNC_RECORD_TABLE(attnc_kv_pool_config, ATTNC_KV_POOL_CONFIG_FIELDS)
ATTNC_RECORD_TABLE(attnc_scheduler_config, ATTNC_SCHEDULER_CONFIG_FIELDS)
ATTNC_RECORD_TABLE(attnc_request, ATTNC_REQUEST_FIELDS)
ATTNC_RECORD_TABLE(attnc_sample, ATTNC_SAMPLE_FIELDS)
ATTNC_RECORD_TABLE(attnc_step_info, ATTNC_STEP_INFO_FIELDS)
ATTNC_RECORD_TABLE(attnc_scheduler_stats, ATTNC_SCHEDULER_STATS_FIELDS)

template <typename R, size_t N>
constexpr Record makeRecord(const char *name, const attnc_field (&fields)[N]) {
  return Record{name, fields, int(N), int64_t(sizeof(R))};
}
#define ATTNC_RECORD_ENTRY(record)                                             \
  makeRecord<record>(#record, record##_table::entries)

constexpr Record kRecords[] = {
    ATTNC_RECORD_ENTRY(attnc_variant_spec),
    ATTNC_RECORD_ENTRY(attnc_tensor_spec),
    ATTNC_RECORD_ENTRY(attnc_batch),
    ATTNC_RECORD_ENTRY(attnc_limits),
    ATTNC_RECORD_ENTRY(attnc_kv_pool_config),
    ATTNC_RECORD_ENTRY(attnc_scheduler_config),
    ATTNC_RECORD_ENTRY(attnc_request),
    ATTNC_RECORD_ENTRY(attnc_sample),
    ATTNC_RECORD_ENTRY(attnc_step_info),
    ATTNC_RECORD_ENTRY(attnc_scheduler_stats),
};

} // namespace

extern "C" {

const attnc_field *attnc_record_fields(const char *record, int *numFields,
                                       int64_t *size) {
  for (const Record &r : kRecords) {
    if (record && std::strcmp(record, r.name) == 0) {
      if (numFields)
        *numFields = r.numFields;
      if (size)
        *size = r.size;
      return r.fields;
    }
  }
  if (numFields)
    *numFields = 0;
  if (size)
    *size = 0;
  return nullptr;
}

const char *attnc_record_name(int index) {
  if (index < 0 || index >= int(std::size(kRecords)))
    return "";
  return kRecords[index].name;
}

} // extern "C"
