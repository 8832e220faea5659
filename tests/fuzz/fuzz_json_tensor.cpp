// Fuzz target: JSON tensor parsing (tools/json_tensor.hpp), as the actorflow
// command reads --feed values and --steps lines.
//
// Input: JSON text. A document that parses is turned into a tensor; a tensor
// that results is written back with TensorToJson, dumped, and parsed again,
// which must give the same dtype and shape. The command's streaming writer,
// AppendTensorJson, must write exactly that text with summaries off, and no
// more than TensorJsonBytesBound with them off or on (the bound the command
// checks against its memory before writing). JsonSnippet (the error-message
// form) runs on every document. Findings: crashes, sanitizer reports,
// exceptions (none of these functions may throw), a broken round trip and a
// writer that differs from TensorToJson or outgrows its bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "actorflow/core/tensor.hpp"
#include "tests/fuzz/fuzz_util.hpp"
#include "tools/json_tensor.hpp"

using namespace actorflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  (void)JsonSnippet(j);
  Tensor t;
  if (!TensorFromJson(j, &t).ok()) return 0;
  const nlohmann::json back = TensorToJson(t);
  const std::string text = back.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  nlohmann::json reparsed = nlohmann::json::parse(text, nullptr, false);
  fuzz::FuzzCheck(!reparsed.is_discarded(), "TensorToJson wrote JSON that does not parse");
  TensorJsonOptions whole;
  whole.summarize_threshold = -1;  // --full-values
  std::string appended;
  AppendTensorJson(t, whole, &appended);
  fuzz::FuzzCheck(appended == text, "AppendTensorJson (summaries off) differs from TensorToJson(t).dump()");
  fuzz::FuzzCheck(appended.size() <= TensorJsonBytesBound(t, whole), "AppendTensorJson outgrew TensorJsonBytesBound");
  const TensorJsonOptions summarized;  // the command's default: numpy's threshold, 3 edge items
  appended.clear();
  AppendTensorJson(t, summarized, &appended);
  fuzz::FuzzCheck(appended.size() <= TensorJsonBytesBound(t, summarized),
                  "AppendTensorJson (summarised) outgrew TensorJsonBytesBound");
  if (back["values"].is_null()) return 0;  // a dtype without a JSON form
  Tensor again;
  const Status s = TensorFromJson(reparsed, &again);
  fuzz::FuzzCheck(s.ok(), "TensorFromJson refused what TensorToJson wrote");
  fuzz::FuzzCheck(again.dtype() == t.dtype(), "round trip changed the dtype");
  fuzz::FuzzCheck(again.shape() == t.shape(), "round trip changed the shape");
  return 0;
}
