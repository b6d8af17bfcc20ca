#include "SentencePiecePlugin.h"

#include "SentencePieceTokenizer.h"

namespace qs {

std::unique_ptr<Tokenizer> SentencePiecePlugin::loadModelFile(const std::string& path,
                                                              std::string* error) const {
    return SentencePieceTokenizer::load(path, error);
}

} // namespace qs
