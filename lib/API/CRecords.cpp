//===- CRecords.cpp - the layouts of attnc_c.h's records ------------------===//
//
// attnc_record_fields' tables, built from the same ATTNC_<RECORD>_FIELDS
// lists that define the structs in attnc_c.h: a field's offset and size
// come from the compiler, its kind from its C type, its encoding from its
// C type too (enums) or, for the variant spec, from the list that
// generates it (attnc_variant_fields.h).
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

/// The C name of each enum a record holds: bindings find its names as the
/// function <name>_name. A record field of an enum not named here does not
/// compile.
#define ATTNC_ENUM_TYPE(T)                                                     \
  constexpr const char *enumType(T *) { return #T; }
ATTNC_ENUM_TYPE(attnc_dtype)
ATTNC_ENUM_TYPE(attnc_layout)
ATTNC_ENUM_TYPE(attnc_page_order)
ATTNC_ENUM_TYPE(attnc_kv_scales)
ATTNC_ENUM_TYPE(attnc_role)
ATTNC_ENUM_TYPE(attnc_kv_memory)
ATTNC_ENUM_TYPE(attnc_policy)
#undef ATTNC_ENUM_TYPE

/// A field's entry, its encoding from its C type unless `encoding` says.
template <typename T>
constexpr attnc_field
entry(const char *name, size_t offset,
      attnc_field_encoding encoding = ATTNC_ENCODING_VALUE,
      const char *enumName = nullptr, const char *counts = nullptr,
      bool hasNone = false, int64_t none = 0) {
  if constexpr (std::is_enum_v<T>) {
    encoding = ATTNC_ENCODING_ENUM;
    enumName = enumType(static_cast<T *>(nullptr));
  }
  return attnc_field{name,        int64_t(offset), int64_t(sizeof(T)),
                     kindOf<T>(), encoding,        enumName,
                     counts,      int(hasNone),    none};
}

struct Record {
  const char *name;
  const attnc_field *fields;
  int numFields;
  int64_t size;
};

#define ATTNC_FIELD_ENTRY(type, field)                                         \
  entry<type>(#field, offsetof(Self, field)),
#define ATTNC_RECORD_TABLE(record, fields)                                     \
  struct record##_table {                                                      \
    using Self = record;                                                       \
    static constexpr attnc_field entries[] = {fields(ATTNC_FIELD_ENTRY)};      \
  };                                                                           \
  static_assert(sizeof(record##_table::entries) > 0);

// The variant spec's entries carry the encodings of its list: flags,
// sentinels, the capture count.
#define PLAIN(f) entry<decltype(Self::f)>(#f, offsetof(Self, f)),
#define WITH_NONE(f, encoding, enumName, none)                                 \
  entry<decltype(Self::f)>(#f, offsetof(Self, f), encoding, enumName, nullptr, \
                           true, none),
#define ENTRY_INT64(A, f, cpp, d) PLAIN(f)
#define ENTRY_ENUM(A, f, cpp, CEnum, Enum, d) PLAIN(f) // ENUM by its type
#define ENTRY_OPTIONAL_ENUM(A, f, cpp, CEnum, Enum, none)                      \
  WITH_NONE(f, ATTNC_ENCODING_ENUM, #CEnum, none)
#define ENTRY_FLAG(A, f, cpp, d)                                               \
  entry<decltype(Self::f)>(#f, offsetof(Self, f), ATTNC_ENCODING_FLAG),
#define ENTRY_OPTIONAL_FLOAT(A, f, cpp, none)                                  \
  WITH_NONE(f, ATTNC_ENCODING_VALUE, nullptr, none)
#define ENTRY_STRING(A, f, cpp, d) PLAIN(f)
#define ENTRY_OPTIONAL_STRING(A, f, cpp)                                       \
  WITH_NONE(f, ATTNC_ENCODING_VALUE, nullptr, 0)
#define ENTRY_OPTIONAL_PAIR(A, f1, f2, cpp, none)                              \
  WITH_NONE(f1, ATTNC_ENCODING_VALUE, nullptr, none)                           \
  WITH_NONE(f2, ATTNC_ENCODING_VALUE, nullptr, none)
#define ENTRY_STRINGS(A, f, count, cpp, max)                                   \
  PLAIN(f)                                                                     \
  entry<decltype(Self::count)>(#count, offsetof(Self, count),                  \
                               ATTNC_ENCODING_COUNT, nullptr, #f),
struct attnc_variant_spec_table {
  using Self = attnc_variant_spec;
  static constexpr attnc_field entries[] = {ATTNC_VARIANT_SPEC(ENTRY, ~)};
};
#define ATTNC_ONE(type, field) +1
static_assert(std::size(attnc_variant_spec_table::entries) ==
                  0 ATTNC_VARIANT_SPEC_FIELDS(ATTNC_ONE),
              "an entry for each of the struct's fields");
#undef ATTNC_ONE
#undef PLAIN
#undef WITH_NONE
#undef ENTRY_INT64
#undef ENTRY_ENUM
#undef ENTRY_OPTIONAL_ENUM
#undef ENTRY_FLAG
#undef ENTRY_OPTIONAL_FLOAT
#undef ENTRY_STRING
#undef ENTRY_OPTIONAL_STRING
#undef ENTRY_OPTIONAL_PAIR
#undef ENTRY_STRINGS

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
