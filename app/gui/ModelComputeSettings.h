#pragma once

#include <QString>

namespace qs {

// The device and precision last chosen for each model (the evaluation panel's, which every run
// of that model uses), remembered in QSettings across sessions. Models are keyed by their
// normalised path (RecentModelList::normalized), the folder or the .gguf file as opened.
struct ModelCompute {
    QString device; // empty: nothing saved
    QString dtype;
};

class ModelComputeSettings {
public:
    static ModelCompute load(const QString& model);
    static void save(const QString& model, const ModelCompute& compute);
};

} // namespace qs
