#pragma once
// Deferred reporting of out-of-range indices on CUDA (indexing.cu): the record a kernel fills on
// the first bad index it meets, the claim protocol it follows, and what the host makes of the
// record after it has waited for the device. Free of CUDA headers, so the host tests check the
// message per op, the reset and "first claim wins" on any machine; the kernels run the same
// claim_index_error with atomicCAS and __threadfence_system.
//
// The record lives in mapped page-locked host memory (one per device, index_error.cpp): a kernel
// writes it over the bus, and the host reads it with a plain load after any wait for the device
// (a blocking copy to or from the host, cuda::synchronize, Event::synchronize), so an empty
// record costs nothing and no call waits for the device to report.
#include <cstdint>
#include <optional>
#include <string>

#include "ember/half.h"  // EMBER_HD

namespace ember::cuda_impl {

/// The ops whose kernels record a bad index (values stored in the record; 0 is none).
enum class IndexOp : int32_t { IndexSelect = 1, Gather = 2, ScatterAdd = 3, ClassTarget = 4, EmbeddingBag = 5 };

/// States of IndexErrorRecord::claim.
inline constexpr uint32_t kIndexErrorEmpty = 0;    // nothing recorded
inline constexpr uint32_t kIndexErrorWriting = 1;  // claimed: the claiming thread is writing the fields
inline constexpr uint32_t kIndexErrorReady = 2;    // the fields are complete and visible to the host

/// The record, as laid out in mapped host memory. Only the thread that moved `claim` from empty
/// to writing touches the fields; it publishes them by setting `claim` to ready last. Only the
/// host moves it from ready back to empty, after copying the fields.
struct IndexErrorRecord {
  uint32_t claim;
  int32_t op;     // IndexOp
  int64_t value;  // the bad index
  int64_t dim;    // the indexed dimension (already wrapped)...
  int64_t size;   // ...and its size: valid indices are [0, size)
};

/// The kernel side: records (op, value, dim, size) unless a bad index is already recorded (the
/// first claim wins; later bad indices, in this op or any other op of the device, are dropped
/// until the host has taken the record). `cas(word, expected, desired)` returns the old value
/// atomically (atomicCAS on the device); `publish()` orders the field writes before the claim's
/// final store as the host sees them (__threadfence_system). Returns whether this call claimed.
template <typename Cas, typename Publish>
EMBER_HD bool claim_index_error(IndexErrorRecord* record, IndexOp op, int64_t value, int64_t dim, int64_t size,
                                const Cas& cas, const Publish& publish) {
  volatile IndexErrorRecord* v = record;
  // A plain read first: when many indices are bad, all but the first thread skip the atomic
  // (a round trip over the bus to host memory).
  if (v->claim != kIndexErrorEmpty) return false;
  if (cas(&record->claim, kIndexErrorEmpty, kIndexErrorWriting) != kIndexErrorEmpty) return false;
  v->op = static_cast<int32_t>(op);
  v->value = value;
  v->dim = dim;
  v->size = size;
  publish();
  v->claim = kIndexErrorReady;
  return true;
}

/// What the host takes out of a complete record.
struct IndexErrorReport {
  IndexOp op = IndexOp::Gather;
  int64_t value = 0;
  int64_t dim = 0;
  int64_t size = 0;
};

/// The host side, after a wait for the device: the record's content if it is complete, leaving
/// the record empty (so a caught error is reported once). nullopt when it is empty, or still
/// being written by a kernel on another stream that the wait did not cover (left as it is: a
/// later wait reports it).
inline std::optional<IndexErrorReport> take_index_error(IndexErrorRecord* record) {
  volatile IndexErrorRecord* v = record;
  if (v->claim != kIndexErrorReady) return std::nullopt;
  IndexErrorReport r;
  r.op = static_cast<IndexOp>(v->op);
  r.value = v->value;
  r.dim = v->dim;
  r.size = v->size;
  v->op = 0;
  v->value = 0;
  v->dim = 0;
  v->size = 0;
  v->claim = kIndexErrorEmpty;  // last: a new claim may start once this store lands
  return r;
}

/// The CPU backend's message for the op (src/backend/cpu/indexing.cpp), then where and when the
/// CUDA backend found it, e.g. "index 12 is out of bounds for dimension 0 with size 10 (gather on
/// cuda:0; found at the next synchronisation, ...: set EMBER_CUDA_CHECK_INDICES=1 to stop at the
/// op itself)".
inline std::string index_error_message(const IndexErrorReport& r, int device) {
  const std::string bounds = std::to_string(r.value) + " is out of bounds for dimension " + std::to_string(r.dim) +
                             " with size " + std::to_string(r.size);
  const std::string where = " on cuda:" + std::to_string(device);
  std::string head;
  std::string effect;
  switch (r.op) {
    case IndexOp::IndexSelect:
      // The CPU's message names no index; the record has it, so it follows in parentheses.
      head = "index out of range in self (index_select" + where + ": index " + bounds;
      effect = "it read 0 for that index";
      break;
    case IndexOp::Gather:
      head = "index " + bounds + " (gather" + where;
      effect = "it read 0 for that index";
      break;
    case IndexOp::ScatterAdd:
      head = "index " + bounds + " (scatter_add" + where;
      effect = "it added nothing for that index";
      break;
    case IndexOp::ClassTarget:
      // `dim` holds the sample: a class target has no dimension of its own.
      head = "Target " + std::to_string(r.value) + " is out of bounds. (cross_entropy" + where + ": sample " +
             std::to_string(r.dim) + " of a batch with " + std::to_string(r.size) + " classes";
      effect = "that sample counted as ignored";
      break;
    case IndexOp::EmbeddingBag:
      head = "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be " + std::to_string(r.value) +
             " (embedding_bag" + where;
      effect = "that position was skipped";
      break;
    default:
      head = "index " + bounds + " (unknown indexing op " + std::to_string(static_cast<int32_t>(r.op)) + where;
      effect = "it ignored that index";
      break;
  }
  return head + "; found at the next synchronisation, so the error surfaced after later ops were queued and " + effect +
         ": set EMBER_CUDA_CHECK_INDICES=1 to stop at the op itself)";
}

}  // namespace ember::cuda_impl
