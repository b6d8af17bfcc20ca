#pragma once

#include "RecipeDocument.h" // Q_DECLARE_METATYPE(qs::Recipe) for the signals
#include "run/SchemeSearch.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QSpinBox;

namespace qs {

class PlotWidget;

// The recipe search in the workbench (run/SchemeSearch.h): what to search (candidates and a
// budget), then the predicted size/KL frontier with the measured point, a slider (or a click on
// the plot) to move along it, and the recipe of the chosen point to apply. The search itself runs
// in the engine: the view asks for it (searchRequested) and shows what comes back (setResult).
class FrontierView : public QWidget {
    Q_OBJECT
public:
    explicit FrontierView(QWidget* parent = nullptr);

    // The candidates and budget as entered; throws qs::Error naming the field when they are not
    // usable (an empty candidate list, a budget that is not positive).
    SchemeSearchRequest request() const;
    void setCandidates(const QString& commaSeparated);
    void setBudget(bool klBudget, double value);
    void setBusy(bool busy);

    // A finished search over `base` (the recipe searched from, without schemes): plots its
    // frontier, selects the chosen point.
    void setResult(const SchemeSearchResult& result, const Recipe& base);
    void clear();
    bool hasResult() const { return !m_result.frontier.empty(); }
    const SchemeSearchResult& result() const { return m_result; }

    int selectedPoint() const { return m_selected; }
    void selectPoint(int index);
    // A frontier point; the chosen one is the search's pick (refined in context when it was).
    const SearchPoint& pointAt(int index) const;
    // The recipe of a frontier point over the base searched from.
    Recipe recipeAt(int index) const;
    QString summaryText() const;
    PlotWidget* plot() const { return m_plot; }

Q_SIGNALS:
    void searchRequested();
    // setResult has shown a search's frontier.
    void resultShown();
    // The selected point moved: its recipe, for the layer tree to preview.
    void pointSelected(const qs::Recipe& proposed);
    void applyRequested(const qs::Recipe& recipe, const QString& description);

private:
    void redraw();

    QLineEdit* m_candidates;
    QComboBox* m_budgetKind;
    QDoubleSpinBox* m_budget;
    QSpinBox* m_costWindows;
    QComboBox* m_unitCosts;
    QSpinBox* m_refineRounds;
    QPushButton* m_search;
    PlotWidget* m_plot;
    QSlider* m_slider;
    QLabel* m_summary;
    QPushButton* m_apply;
    SchemeSearchResult m_result;
    Recipe m_base;
    int m_selected = -1;
};

} // namespace qs
