#include "RecipeDefaults.h"

#include "quant/SchemeRegistry.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QSettings>

// A static library's resources are linked only when something names them (Qt's
// Q_INIT_RESOURCE, which must be called outside a namespace).
static void initEmbeddedResources() {
    Q_INIT_RESOURCE(quantscope);
}

namespace qs {

namespace {
const char* const DemoCalibrationResource = ":/quantscope/demo-calibration.txt";
const char* const DemoCalibrationName = "data/demo-calibration.txt";
const char* const LastCalibrationKey = "recipe/lastCalibration";
// The key the evaluation panel kept its own text under, before it edited the recipe's.
const char* const LastEvaluationKey = "eval/dataPath";
constexpr int ParentsSearched = 3;
} // namespace

bool RecipeDefaults::isUntouched(const Recipe& recipe) {
    return recipe.toOrderedJson() == Recipe{}.toOrderedJson();
}

Recipe RecipeDefaults::propose(const Recipe& current, const QString& modelDirectory) {
    if (!isUntouched(current))
        return current;
    Recipe proposed = current;
    proposed.global = quant::resolveScheme(DefaultScheme);
    proposed.calibration.dataPath = calibrationFor(modelDirectory).toStdString();
    proposed.evaluation.dataPath = lastEvaluation().toStdString();
    return proposed;
}

QString RecipeDefaults::calibrationFor(const QString& modelDirectory) {
    const QString last = QSettings().value(QLatin1String(LastCalibrationKey)).toString();
    if (!last.isEmpty() && QFileInfo(last).isFile())
        return last;
    return calibrationNear(modelDirectory);
}

QString RecipeDefaults::calibrationNear(const QString& modelDirectory) {
    if (modelDirectory.isEmpty())
        return {};
    QDir dir(modelDirectory);
    for (int up = 0; up <= ParentsSearched; ++up) {
        const QDir data(dir.filePath(QStringLiteral("data")));
        // The TinyStories sample first, as scripts/screenshots.sh takes it: 8 KB read at once,
        // where the 2 MB general text costs a small model's Analyze seconds of tokenizing. Then
        // any other, sorted by name so the choice does not depend on the file system's order.
        QStringList texts =
            data.entryList({QStringLiteral("*calib*.txt")}, QDir::Files, QDir::Name);
        const QString preferred = QStringLiteral("tinystories-calib.txt");
        if (texts.contains(preferred))
            texts.prepend(preferred);
        if (!texts.isEmpty())
            return QDir::cleanPath(data.filePath(texts.constFirst()));
        if (!dir.cdUp())
            break;
    }
    return {};
}

void RecipeDefaults::rememberCalibration(const QString& path) {
    if (!path.isEmpty())
        QSettings().setValue(QLatin1String(LastCalibrationKey), QFileInfo(path).absoluteFilePath());
}

QString RecipeDefaults::lastEvaluation() {
    const QString last = QSettings().value(QLatin1String(LastEvaluationKey)).toString();
    return !last.isEmpty() && QFileInfo(last).isFile() ? last : QString();
}

void RecipeDefaults::rememberEvaluation(const QString& path) {
    if (!path.isEmpty())
        QSettings().setValue(QLatin1String(LastEvaluationKey), QFileInfo(path).absoluteFilePath());
}

QString RecipeDefaults::ensureDemoCalibration(const QString& demoDirectory, QString* error) {
    const QString path = QDir(demoDirectory).filePath(QLatin1String(DemoCalibrationName));
    if (QFileInfo(path).isFile())
        return path;
    static const bool initialised = (initEmbeddedResources(), true);
    Q_UNUSED(initialised);
    QFile embedded{QString::fromLatin1(DemoCalibrationResource)};
    if (!embedded.open(QIODevice::ReadOnly)) {
        *error =
            QStringLiteral("the GUI has no embedded demo text (%1)").arg(embedded.errorString());
        return {};
    }
    if (!QDir().mkpath(QFileInfo(path).absolutePath())) {
        *error = QStringLiteral("cannot create %1").arg(QFileInfo(path).absolutePath());
        return {};
    }
    // Whole or not at all: a half-written text would calibrate on what it holds.
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(embedded.readAll()) < 0 || !out.commit()) {
        *error = QStringLiteral("cannot write %1: %2").arg(path, out.errorString());
        return {};
    }
    return path;
}

} // namespace qs
