// StartPage: its buttons and the recent-models list ask for the right thing, missing folders
// cannot be opened, and a busy page ignores clicks.
#include "StartPage.h"
#include "TestMain.h"
#include "TestSupport.h"

#include <QDir>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

class TestStartPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void buttonsAskToOpen() {
        qs::StartPage page;
        QSignalSpy folder(&page, &qs::StartPage::openFolderRequested);
        QSignalSpy demo(&page, &qs::StartPage::openDemoRequested);
        QTest::mouseClick(page.openFolderButton(), Qt::LeftButton);
        QTest::mouseClick(page.openDemoButton(), Qt::LeftButton);
        QCOMPARE(folder.count(), 1);
        QCOMPARE(demo.count(), 1);
        page.setBusy(true);
        QTest::mouseClick(page.openDemoButton(), Qt::LeftButton);
        QCOMPARE(demo.count(), 1);
    }

    void recentModelsAreClickable() {
        const QString present = qs::test::tempDir(QStringLiteral("startpage"));
        const QString missing = present + QStringLiteral("/gone");
        qs::StartPage page;
        page.resize(800, 600);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        page.setRecentModels({present, missing});
        QListWidget* list = page.recentList();
        QCOMPARE(list->count(), 2);
        QVERIFY(list->item(0)->flags() & Qt::ItemIsEnabled);
        QVERIFY(!(list->item(1)->flags() & Qt::ItemIsEnabled));
        QVERIFY(list->item(0)->text().contains(QDir::toNativeSeparators(present)));

        QSignalSpy recent(&page, &qs::StartPage::openRecentRequested);
        QTest::mouseClick(list->viewport(), Qt::LeftButton, {},
                          list->visualItemRect(list->item(0)).center());
        QCOMPARE(recent.count(), 1);
        QCOMPARE(recent[0][0].toString(), present);
        QTest::mouseClick(list->viewport(), Qt::LeftButton, {},
                          list->visualItemRect(list->item(1)).center());
        QCOMPARE(recent.count(), 1); // the missing folder does not open

        page.setRecentModels({});
        QCOMPARE(list->count(), 1); // the "no recent models" hint
        QVERIFY(!(list->item(0)->flags() & Qt::ItemIsEnabled));
    }
};

QS_TEST_MAIN(TestStartPage)
#include "tst_startpage.moc"
