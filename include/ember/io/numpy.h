#pragma once
/// Reading and writing NumPy's files: `.npy` (numpy.save / numpy.load, one array) and `.npz`
/// (numpy.savez / numpy.savez_compressed, a ZIP archive of named `.npy` files).
///
///   io::save_npy("w.npy", model->weight);           // np.load("w.npy") in Python
///   Tensor x = io::load_npy("features.npy");         // from np.save("features.npy", a)
///   io::save_npz("arrays.npz", {{"w", w}, {"b", b}});  // np.load("arrays.npz")["w"]
///   for (auto& [name, t] : io::load_npz("arrays.npz")) ...
///
/// An `.npy` file is the magic "\x93NUMPY", a format version, a header that is a Python dict literal
/// (`{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, padded with spaces and a newline
/// so that the data starts at a multiple of 64 bytes) and the array's bytes.
///
/// Writing follows numpy.save byte for byte: format version 1.0, little-endian, C order, the same
/// header text and padding (NumPy's limit of 64 dimensions applies).
/// NumPy has no bfloat16, so saving a bfloat16 tensor is an error (convert it with
/// `.to(ember::kFloat32)` first). Tensors may live on any device and have any layout; they are
/// copied to contiguous host memory as they are written. Files are written atomically (see
/// atomic_file.h): a failed or interrupted save leaves any earlier file at that path as it was.
///
/// Reading accepts format versions 1.0, 2.0 and 3.0 and the dtypes ember shares with NumPy: bool
/// ('|b1'), uint8, int8, int16, int32, int64, float16, float32 and float64, in either byte order
/// ('<', '>', '=' or '|'; big-endian data is swapped on reading), in C or Fortran order (the
/// result holds the same values as NumPy's array, in a contiguous row-major tensor). Other dtypes
/// (complex, uint16-64, strings, object arrays, structured dtypes, datetimes) are refused with an
/// error naming the dtype; object arrays hold pickles, which ember never runs. As numpy.load does,
/// bytes after the array's data are ignored (np.save called twice on one open file leaves a second
/// array there). Every file is treated as hostile: the header is parsed as a Python literal by a
/// strict parser of its own (never evaluated), at most 10000 bytes long (numpy.load's default
/// `max_header_size`), and the shape is checked for overflow and against the file's size before
/// anything is allocated for the data. Each malformed file gives an ember::Error naming the file
/// and the problem.
///
/// An `.npz` archive holds one `<name>.npy` entry per array; names are given without the ".npy",
/// as `numpy.load(path).files` shows them. Entries may be stored (numpy.savez) or deflated
/// (numpy.savez_compressed); ember writes them stored, as numpy.savez does.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "ember/io/safetensors.h"  // NamedTensors
#include "ember/tensor.h"

namespace ember::io {

/// The largest .npy header ember reads: numpy.load's default `max_header_size`.
inline constexpr uint64_t kNpyMaxHeaderBytes = 10'000;

/// Reads a .npy file into a contiguous CPU tensor.
Tensor load_npy(const std::filesystem::path& path);
/// Reads .npy bytes already in memory; `source` names them in error messages.
Tensor load_npy_from_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");

/// Writes `tensor` to `path` as numpy.save would, atomically. Errors (a bfloat16 or undefined
/// tensor, no space, an unwritable folder) are ember::Error naming the path and the reason.
void save_npy(const std::filesystem::path& path, const Tensor& tensor);
/// The bytes save_npy would write.
std::vector<uint8_t> save_npy_to_bytes(const Tensor& tensor);

/// Reads every array of a .npz archive, in archive order, as contiguous CPU tensors named as
/// `numpy.load(path).files` names them. An entry whose name does not end in ".npy" is an error.
NamedTensors load_npz(const std::filesystem::path& path);
/// Reads .npz bytes already in memory; `source` names them in error messages.
NamedTensors load_npz_from_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");

/// Writes `tensors` to `path` as numpy.savez does (one stored "<name>.npy" entry each, in the
/// order given), atomically. Names must be unique and non-empty; `numpy.load(path)[name]` gives
/// each array back. Errors as for save_npy.
void save_npz(const std::filesystem::path& path, const NamedTensors& tensors);
/// The bytes save_npz would write.
std::vector<uint8_t> save_npz_to_bytes(const NamedTensors& tensors);

}  // namespace ember::io
