#include "FrontierView.h"

#include "PlotWidget.h"
#include "util/Error.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

#include <map>

namespace qs {

namespace {

QString joined(const std::vector<std::string>& names) {
    QStringList list;
    for (const std::string& n : names)
        list << QString::fromStdString(n);
    return list.join(QLatin1Char(','));
}

// A count box whose 0 means "no limit" or "off" (the cost windows, the refinement rounds).
void setUpCountBox(QSpinBox* box, const QString& objectName, int max, const QString& zero,
                   const QString& suffix, const QString& toolTip) {
    box->setObjectName(objectName);
    box->setRange(0, max);
    box->setSpecialValueText(zero);
    box->setSuffix(suffix);
    box->setToolTip(toolTip);
}

} // namespace

FrontierView::FrontierView(QWidget* parent)
    : QWidget(parent), m_candidates(new QLineEdit(joined(defaultSearchCandidates()), this)),
      m_budgetKind(new QComboBox(this)), m_budget(new QDoubleSpinBox(this)),
      m_costWindows(new QSpinBox(this)), m_unitCosts(new QComboBox(this)),
      m_refineRounds(new QSpinBox(this)), m_search(new QPushButton(tr("Search"), this)),
      m_plot(new PlotWidget(this)), m_slider(new QSlider(Qt::Horizontal, this)),
      m_summary(new QLabel(this)), m_apply(new QPushButton(tr("Apply to Recipe"), this)) {
    m_candidates->setObjectName(QStringLiteral("searchCandidates"));
    m_candidates->setToolTip(
        tr("Schemes a layer may take, comma-separated; 'none' leaves it unquantized. Each is "
           "calibrated once and every layer group measured alone with it (KL against the "
           "full-precision model on the recipe's evaluation text)."));
    m_budgetKind->setObjectName(QStringLiteral("searchBudgetKind"));
    m_budgetKind->addItem(tr("Bits per weight at most"));
    m_budgetKind->addItem(tr("Mean KL at most"));
    m_budget->setObjectName(QStringLiteral("searchBudget"));
    m_budget->setDecimals(4);
    m_budget->setRange(0.0, 64.0);
    m_budget->setSingleStep(0.25);
    m_budget->setValue(4.5);
    connect(m_budgetKind, &QComboBox::currentIndexChanged, this, [this](int kind) {
        m_budget->setSingleStep(kind == 0 ? 0.25 : 0.001);
        m_budget->setValue(kind == 0 ? 4.5 : 0.01);
        m_refineRounds->setEnabled(kind == 0); // a size budget only
    });
    setUpCountBox(
        m_costWindows, QStringLiteral("searchCostWindows"), 100000, tr("all"), tr(" window(s)"),
        tr("Measure each layer group's KL on the first N evaluation windows only (the chosen "
           "recipe is measured on all): about N / (all) of the search's cost, from fewer "
           "tokens."));
    m_unitCosts->setObjectName(QStringLiteral("searchUnitCosts"));
    m_unitCosts->addItem(tr("every candidate measured"));
    m_unitCosts->addItem(tr("one measured, rest scaled"));
    m_unitCosts->setToolTip(
        tr("Every candidate measured: each layer group's KL alone under each candidate. One "
           "measured, rest scaled: under one candidate only (the largest whose uniform recipe "
           "fits the budget, else the group's smallest), carried to the others by the group's "
           "local output error (about a third of the evaluations with three candidates; "
           "estimates)."));
    setUpCountBox(
        m_refineRounds, QStringLiteral("searchRefineRounds"), 10, tr("off"), tr(" round(s)"),
        tr("After the frontier's pick, measure every layer group switched to each other "
           "candidate with the rest as picked (the groups' errors interact where most are "
           "quantized), re-solve with those costs and keep the new pick only if it measures "
           "lower. Each round costs one evaluation per group and candidate. Size budgets "
           "only."));
    m_search->setObjectName(QStringLiteral("searchButton"));
    connect(m_search, &QPushButton::clicked, this, &FrontierView::searchRequested);

    auto* form = new QFormLayout;
    form->addRow(tr("Candidates"), m_candidates);
    auto* budgetRow = new QHBoxLayout;
    budgetRow->addWidget(m_budgetKind);
    budgetRow->addWidget(m_budget);
    form->addRow(tr("Budget"), budgetRow);
    // Search shares its row with the cost windows, not the budget: at the dock's default width
    // a budget row of three widgets cut the button off.
    auto* costRow = new QHBoxLayout;
    costRow->addWidget(m_costWindows);
    costRow->addWidget(m_search);
    form->addRow(tr("Costs on"), costRow);
    form->addRow(tr("Group costs"), m_unitCosts);
    form->addRow(tr("Refine in context"), m_refineRounds);

    m_plot->setObjectName(QStringLiteral("frontierPlot"));
    m_plot->setAxisLabels(tr("bits per weight (Quark hf_format)"), tr("mean KL"));
    m_plot->setLogY(true);
    m_plot->setMinimumHeight(180);
    // Series 0 is the frontier; the markers over it are not points of their own.
    m_plot->onPointClicked([this](int series, int point) {
        if (series == 0)
            m_slider->setValue(point);
    });
    m_slider->setObjectName(QStringLiteral("frontierSlider"));
    m_slider->setToolTip(tr("Move along the frontier: the layer tree shows which layers change "
                            "scheme at the point selected."));
    connect(m_slider, &QSlider::valueChanged, this, &FrontierView::selectPoint);
    m_summary->setObjectName(QStringLiteral("frontierSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_apply->setObjectName(QStringLiteral("applyFrontierPoint"));
    connect(m_apply, &QPushButton::clicked, this, [this] {
        if (m_selected < 0)
            return;
        const SearchPoint& p = pointAt(m_selected);
        Q_EMIT applyRequested(recipeAt(m_selected),
                              tr("designed recipe at %1 bits per weight").arg(p.bits, 0, 'f', 2));
    });

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_plot, 1);
    layout->addWidget(m_slider);
    layout->addWidget(m_summary);
    layout->addWidget(m_apply, 0, Qt::AlignRight);
    clear();
}

SchemeSearchRequest FrontierView::request() const {
    SchemeSearchRequest q;
    for (const QString& c : m_candidates->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        q.candidates.push_back(c.trimmed().toStdString());
    if (q.candidates.empty())
        throw Error("recipe search", "candidates", "list at least one scheme");
    if (m_budgetKind->currentIndex() == 0) {
        if (m_budget->value() <= 0.0)
            throw Error("recipe search", "budget", "bits per weight must be positive");
        q.budgetBits = m_budget->value();
    } else {
        q.budgetKl = m_budget->value();
    }
    q.costWindows = m_costWindows->value();
    q.unitCosts = m_unitCosts->currentIndex() == 1 ? UnitCosts::Scaled : UnitCosts::Measured;
    q.refineRounds = q.budgetKl ? 0 : m_refineRounds->value();
    return q;
}

void FrontierView::setCandidates(const QString& commaSeparated) {
    m_candidates->setText(commaSeparated);
}

void FrontierView::setBudget(bool klBudget, double value) {
    m_budgetKind->setCurrentIndex(klBudget ? 1 : 0);
    m_budget->setValue(value);
}

void FrontierView::setBusy(bool busy) {
    m_search->setEnabled(!busy);
    m_search->setText(busy ? tr("Searching…") : tr("Search"));
}

void FrontierView::clear() {
    m_result = {};
    m_selected = -1;
    m_slider->setEnabled(false);
    m_slider->setRange(0, 0);
    m_apply->setEnabled(false);
    m_summary->setText(tr("Designs a recipe: every layer group gets the candidate that minimises "
                          "the predicted KL divergence within the budget. Calibration and "
                          "evaluation data come from the recipe."));
    m_plot->clear();
    m_plot->setNote(tr("Search to see the size/KL frontier"));
    m_plot->rescaleAndReplot();
}

void FrontierView::setResult(const SchemeSearchResult& result, const Recipe& base) {
    m_result = result;
    m_base = base;
    m_selected = -1;
    {
        const QSignalBlocker block(m_slider);
        m_slider->setRange(0, int(result.frontier.size()) - 1);
        m_slider->setValue(int(result.chosen));
    }
    m_slider->setEnabled(result.frontier.size() > 1);
    m_apply->setEnabled(true);
    selectPoint(int(result.chosen));
    Q_EMIT resultShown();
}

void FrontierView::selectPoint(int index) {
    if (index < 0 || size_t(index) >= m_result.frontier.size() || index == m_selected)
        return;
    m_selected = index;
    if (m_slider->value() != index)
        m_slider->setValue(index);
    redraw();
    Q_EMIT pointSelected(recipeAt(index));
}

const SearchPoint& FrontierView::pointAt(int index) const {
    return size_t(index) == m_result.chosen ? m_result.pick() : m_result.frontier.at(size_t(index));
}

Recipe FrontierView::recipeAt(int index) const {
    return recipeForChoice(m_base, m_result.candidates, m_result.units, pointAt(index).choice);
}

QString FrontierView::summaryText() const {
    if (m_selected < 0)
        return {};
    const SearchPoint& p = pointAt(m_selected);
    std::map<std::string, int> count;
    for (int c : p.choice)
        ++count[searchCandidateName(m_result.candidates, c)];
    QStringList mix;
    for (const auto& [name, n] : count)
        mix << tr("%1 × %2").arg(QString::fromStdString(name)).arg(n);
    const QLocale locale;
    QString text = tr("Point %1 of %2: %3 bits per weight, %4 bytes, predicted KL %5. Layer "
                      "groups: %6.")
                       .arg(m_selected + 1)
                       .arg(m_result.frontier.size())
                       .arg(p.bits, 0, 'f', 3)
                       .arg(locale.toString(qulonglong(p.bytes)))
                       .arg(p.predictedKl, 0, 'g', 4)
                       .arg(mix.join(QStringLiteral(", ")));
    if (size_t(m_selected) == m_result.chosen && m_result.refined) {
        int changed = 0;
        for (size_t u = 0; u < p.choice.size(); ++u)
            changed += p.choice[u] != m_result.frontier[m_result.chosen].choice[u] ? 1 : 0;
        text += tr(" Refined in context: %n layer group(s) changed from the frontier's point "
                   "(its prediction is the measured start plus the measured switches).",
                   nullptr, changed);
    }
    if (size_t(m_selected) == m_result.chosen && m_result.measuredFidelity) {
        const double measured = m_result.measuredFidelity->klMean.value;
        text +=
            tr(" The search's pick, measured: KL %1 (%2 % from the prediction), perplexity "
               "%3.")
                .arg(measured, 0, 'g', 4)
                .arg(measured > 0 ? 100.0 * (p.predictedKl - measured) / measured : 0.0, 0, 'f', 1)
                .arg(m_result.measuredPerplexity->perplexity, 0, 'f', 4);
    }
    return text;
}

void FrontierView::redraw() {
    m_plot->clear();
    QVector<double> x, y;
    for (const SearchPoint& p : m_result.frontier) {
        x << p.bits;
        y << p.predictedKl;
    }
    m_plot->addLineSeries(tr("predicted"), x, y, QColor(0x1f, 0x77, 0xb4), true);
    // The selected point under the measured one, larger, so both show where they meet.
    if (m_selected >= 0) {
        const SearchPoint& p = pointAt(m_selected);
        m_plot->addScatter(tr("selected"), {p.bits}, {p.predictedKl}, QColor(0xff, 0x7f, 0x0e),
                           14.0);
    }
    // Each candidate everywhere, measured by the search (what its prediction is fitted on).
    QVector<double> anchorBits, anchorKl;
    for (const KlAnchor& a : m_result.klModel.anchors()) {
        anchorBits << a.bits;
        anchorKl << a.klMeasured;
    }
    if (!anchorBits.isEmpty())
        m_plot->addScatter(tr("uniform, measured"), anchorBits, anchorKl, QColor(0x2c, 0xa0, 0x2c),
                           8.0);
    const SearchPoint& chosen = m_result.pick();
    if (m_result.measuredFidelity)
        m_plot->addScatter(tr("measured"), {chosen.bits}, {m_result.measuredFidelity->klMean.value},
                           QColor(0xd6, 0x27, 0x28), 8.0);
    // The key goes under the plot (the summary): a note would sit on the frontier's
    // small-size end, top left.
    m_plot->setNote({});
    m_plot->rescaleAndReplot();
    m_summary->setText((m_result.measuredFidelity
                            ? tr("Blue: predicted frontier; green: each candidate everywhere, "
                                 "measured; orange: selected; red: the search's pick, measured.")
                            : tr("Blue: predicted frontier; green: each candidate everywhere, "
                                 "measured; orange: selected.")) +
                       QLatin1Char(' ') + summaryText());
}

} // namespace qs
