// Issue 9: scrolling a panel with the wheel must not change the combo or spin box under the
// pointer unless that box has focus.
#include "TestMain.h"
#include "WheelGuard.h"

#include <QApplication>
#include <QComboBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtTest>

class TestWheelGuard : public QObject {
    Q_OBJECT

    static void wheelDown(QWidget* w) {
        const QPointF pos(w->width() / 2.0, w->height() / 2.0);
        QWheelEvent e(pos, w->mapToGlobal(pos), QPoint(), QPoint(0, -120), Qt::NoButton,
                      Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(w, &e);
    }

private Q_SLOTS:
    void wheelScrollsThePanelNotTheBox() {
        QScrollArea scroll;
        auto* content = new QWidget;
        auto* layout = new QVBoxLayout(content);
        auto* combo = new QComboBox;
        combo->addItems({"a", "b", "c"});
        auto* spin = new QSpinBox;
        spin->setRange(0, 10);
        layout->addWidget(combo);
        layout->addWidget(spin);
        layout->addSpacing(2000); // taller than the viewport: there is something to scroll
        scroll.setWidget(content);
        scroll.setWidgetResizable(true);
        scroll.resize(200, 150);
        qs::WheelGuard::install(content);
        scroll.show();
        QVERIFY(QTest::qWaitForWindowExposed(&scroll));
        QCOMPARE(combo->focusPolicy(), Qt::StrongFocus);

        combo->clearFocus(); // the window gave its first box focus on show
        spin->clearFocus();
        QVERIFY(!combo->hasFocus() && !spin->hasFocus());
        wheelDown(combo);
        wheelDown(spin);
        QCOMPARE(combo->currentIndex(), 0);
        QCOMPARE(spin->value(), 0);
        QVERIFY(scroll.verticalScrollBar()->value() > 0); // the panel scrolled instead

        // With focus (clicked or tabbed into), the wheel changes the value as usual.
        scroll.activateWindow();
        combo->setFocus();
        QTRY_VERIFY(combo->hasFocus());
        wheelDown(combo);
        QCOMPARE(combo->currentIndex(), 1);
    }
};

QS_TEST_MAIN(TestWheelGuard)
#include "tst_wheelguard.moc"
