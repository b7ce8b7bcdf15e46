#!/usr/bin/env python3
"""Generate the binary files of the KnowHub demo corpus (assets/demo/).

The corpus describes a fictional company, Northwind Robotics (北风机器人).
All text is original and written for KnowHub.

Text files (Markdown, HTML, README) are committed as-is; this script
produces only the binary documents:

    assets/demo/engineering/incident-runbook.docx   (python-docx)
    assets/demo/data/projects.xlsx                  (openpyxl)
    assets/demo/policies/security-policy.pdf        (fpdf2)

Requirements:  pip install python-docx openpyxl fpdf2

Output is deterministic: document metadata dates are fixed, and the
ZIP containers (docx/xlsx) are rewritten with fixed timestamps, so
running the script twice produces byte-identical files.

Usage:  python3 assets/make_demo.py
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile
from pathlib import Path

DEMO = Path(__file__).resolve().parent / "demo"

# One fixed timestamp used for every piece of metadata.
FIXED = dt.datetime(2024, 4, 15, 9, 0, 0)
FIXED_UTC = FIXED.replace(tzinfo=dt.timezone.utc)
FIXED_ISO = "2024-04-15T09:00:00Z"
ZIP_TIME = (2024, 4, 15, 9, 0, 0)
AUTHOR = "Northwind Robotics"


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def normalize_ooxml(path: Path) -> None:
    """Rewrite a docx/xlsx ZIP with fixed entry timestamps and fixed
    dcterms:created/modified values so the output is reproducible."""
    with zipfile.ZipFile(path) as src:
        entries = [(info.filename, src.read(info.filename)) for info in src.infolist()]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for name, data in entries:
            if name == "docProps/core.xml":
                text = data.decode("utf-8")
                text = re.sub(
                    r"(<dcterms:(created|modified)[^>]*>)[^<]*(</dcterms:\2>)",
                    lambda m: m.group(1) + FIXED_ISO + m.group(3),
                    text,
                )
                data = text.encode("utf-8")
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 0
            info.external_attr = 0o644 << 16
            dst.writestr(info, data)
    path.write_bytes(buf.getvalue())


# ---------------------------------------------------------------------------
# DOCX: incident runbook
# ---------------------------------------------------------------------------

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _add_footnote_part(document, text: str) -> int:
    """python-docx has no footnote API: add a minimal footnotes.xml part
    with one footnote (id 1) and return its id."""
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from xml.sax.saxutils import escape

    xml = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:footnotes xmlns:w="{W_NS}">'
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:pPr><w:spacing w:after="0" w:line="240" w:lineRule="auto"/></w:pPr>'
        '<w:r><w:separator/></w:r></w:p></w:footnote>'
        '<w:footnote w:type="continuationSeparator" w:id="0"><w:p><w:pPr><w:spacing w:after="0" w:line="240" w:lineRule="auto"/></w:pPr>'
        '<w:r><w:continuationSeparator/></w:r></w:p></w:footnote>'
        '<w:footnote w:id="1"><w:p><w:pPr><w:spacing w:after="0"/></w:pPr>'
        '<w:r><w:rPr><w:vertAlign w:val="superscript"/><w:sz w:val="18"/></w:rPr><w:footnoteRef/></w:r>'
        f'<w:r><w:rPr><w:sz w:val="18"/></w:rPr><w:t xml:space="preserve"> {escape(text)}</w:t></w:r>'
        '</w:p></w:footnote>'
        '</w:footnotes>'
    )
    part = Part(
        PackURI("/word/footnotes.xml"),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml",
        xml.encode("utf-8"),
        document.part.package,
    )
    document.part.relate_to(part, RT.FOOTNOTES)
    return 1


def _footnote_reference(paragraph, footnote_id: int) -> None:
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    run = paragraph.add_run()
    rpr = OxmlElement("w:rPr")
    va = OxmlElement("w:vertAlign")
    va.set(qn("w:val"), "superscript")
    rpr.append(va)
    run._r.append(rpr)
    ref = OxmlElement("w:footnoteReference")
    ref.set(qn("w:id"), str(footnote_id))
    run._r.append(ref)


def _restart_numbering(document, paragraphs) -> None:
    """Make `paragraphs` (styled "List Number") a new list that starts at 1:
    python-docx gives every "List Number" paragraph the style's single
    numbering instance, so a second list would otherwise continue at 8."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    style_num_id = document.styles["List Number"].element.pPr.numPr.numId.val
    numbering = document.part.numbering_part.element
    abstract_id = None
    max_id = 0
    for num in numbering.findall(qn("w:num")):
        num_id = int(num.get(qn("w:numId")))
        max_id = max(max_id, num_id)
        if num_id == style_num_id:
            abstract_id = num.find(qn("w:abstractNumId")).get(qn("w:val"))
    new_id = max_id + 1
    num = OxmlElement("w:num")
    num.set(qn("w:numId"), str(new_id))
    abstract = OxmlElement("w:abstractNumId")
    abstract.set(qn("w:val"), abstract_id)
    num.append(abstract)
    override = OxmlElement("w:lvlOverride")
    override.set(qn("w:ilvl"), "0")
    start = OxmlElement("w:startOverride")
    start.set(qn("w:val"), "1")
    override.append(start)
    num.append(override)
    numbering.append(num)
    for paragraph in paragraphs:
        num_pr = paragraph._p.get_or_add_pPr().get_or_add_numPr()
        num_pr.get_or_add_ilvl().val = 0
        num_pr.get_or_add_numId().val = new_id


def make_runbook(path: Path) -> None:
    from docx import Document
    from docx.oxml.ns import qn
    from docx.shared import Pt

    doc = Document()

    # Fonts: a CJK-capable east-Asian font for the Chinese section.
    normal = doc.styles["Normal"]
    normal.font.name = "Calibri"
    normal.font.size = Pt(11)
    normal.element.rPr.rFonts.set(qn("w:eastAsia"), "Microsoft YaHei")

    cp = doc.core_properties
    cp.title = "Incident Runbook"
    cp.subject = "On-call and incident response at Northwind Robotics"
    cp.author = "Northwind Robotics SRE Team"
    cp.last_modified_by = "Northwind Robotics SRE Team"
    cp.keywords = "incident, on-call, severity, SEV1, runbook"
    cp.comments = "Fictional demo document for KnowHub."
    cp.created = FIXED
    cp.modified = FIXED
    cp.last_printed = FIXED
    cp.revision = 3

    doc.add_heading("Incident Runbook", level=0)
    doc.add_paragraph(
        "Northwind Robotics, SRE Team. Version 2.3, effective 15 April 2024. "
        "This runbook tells the on-call engineer what to do from the first alert "
        "until the post-incident review. It complements the Internal Deployment "
        "Specification v3 (rollback procedure) and the Information Security Policy "
        "(reporting of security incidents)."
    )

    # --- 1. Severity levels -------------------------------------------------
    doc.add_heading("1. Severity levels", level=1)
    p = doc.add_paragraph(
        "Every incident gets a severity when it is declared. When in doubt, choose "
        "the higher severity; it can be lowered later. Response times are measured "
        "from the moment the alert fires"
    )
    fid = _add_footnote_part(
        doc,
        "Response times apply 24 hours a day, 7 days a week for SEV1 and SEV2. "
        "SEV3 and SEV4 response times count business hours only "
        "(09:00-18:00 China Standard Time, Monday to Friday).",
    )
    _footnote_reference(p, fid)
    p.add_run(".")

    rows = [
        ("Severity", "Definition", "Acknowledge within", "Status updates", "Example"),
        ("SEV1", "Production outage, data loss, or any robot safety risk",
         "5 minutes", "Every 30 minutes", "Fleet scheduler down in cn-east-1; robots stop moving"),
        ("SEV2", "Major feature degraded for many customers",
         "15 minutes", "Every 60 minutes", "Telemetry delayed more than 10 minutes"),
        ("SEV3", "Minor feature degraded, workaround available",
         "4 business hours", "Daily", "Web console reports load slowly"),
        ("SEV4", "Cosmetic issue or internal tooling problem",
         "Next business day", "When resolved", "Typo in the customer portal"),
    ]
    table = doc.add_table(rows=len(rows), cols=len(rows[0]))
    table.style = "Light Grid Accent 1"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            cell = table.cell(r, c)
            cell.text = value
            if r == 0:
                for run in cell.paragraphs[0].runs:
                    run.bold = True
    doc.add_paragraph(
        "SEV1 and SEV2 incidents page the secondary on-call engineer and the "
        "Incident Commander automatically. A SEV1 that is not resolved within "
        "2 hours is escalated to the CTO."
    )

    # --- 2. First response ---------------------------------------------------
    doc.add_heading("2. First response", level=1)
    doc.add_heading("2.1 Steps for the on-call engineer", level=2)
    steps = [
        "Acknowledge the page in the paging tool within the time given for the severity.",
        "Open an incident channel named #inc-YYYYMMDD-short-name and post the alert link.",
        "Assign a severity using the table in section 1 and name an Incident Commander "
        "(for SEV1 and SEV2 this must be someone other than the person fixing the problem).",
        "Check the deployment log: if a prod release happened in the last 2 hours, roll it "
        "back first, following section 6 of the Deployment Specification v3.",
        "If robots on a customer site behave unsafely, ask the site operator to press the "
        "fleet-wide safety stop before any other action.",
        "Post a status update in #status-customers using the template, then at the interval "
        "required for the severity.",
        "When the impact is over, mark the incident as mitigated and record the end time.",
    ]
    for step in steps:
        doc.add_paragraph(step, style="List Number")

    doc.add_heading("2.2 Roles", level=2)
    doc.add_paragraph(
        "The Incident Commander coordinates and decides; the on-call engineer investigates "
        "and fixes; the Communications Lead (SEV1 only) writes customer updates. Never "
        "let one person hold all three roles for more than 30 minutes."
    )
    doc.add_heading("2.3 Security incidents", level=2)
    doc.add_paragraph(
        "If the incident may involve unauthorised access, leaked credentials or a lost "
        "device, inform the Security Team at security@northwind.example or extension "
        "8000. Security incidents must be reported within 24 hours of discovery, as "
        "required by the Information Security Policy. Do not delete logs or wipe "
        "machines before the Security Team agrees."
    )

    # --- 3. After the incident ---------------------------------------------
    doc.add_heading("3. After the incident", level=1)
    doc.add_paragraph(
        "A blameless post-incident review is mandatory for SEV1 and SEV2. The draft is "
        "due within 3 business days and the review meeting within 5 business days. Every "
        "action item gets an owner and a due date in the tracker. SEV3 incidents need only "
        "a short summary in the incident channel."
    )

    # --- 4. Chinese section --------------------------------------------------
    doc.add_heading("4. 中文说明：值班与升级流程", level=1)
    doc.add_paragraph(
        "本节面向上海办公室的值班工程师，内容与上文英文部分一致，"
        "并补充了国内客户现场的注意事项。"
    )
    doc.add_heading("4.1 收到告警后的处理步骤", level=2)
    zh_steps = [
        "在告警工具中确认告警：SEV1 须在 5 分钟内确认，SEV2 须在 15 分钟内确认。",
        "创建事故频道（#inc-日期-简称），并在频道中贴出告警链接。",
        "根据严重等级表判定等级；SEV1 和 SEV2 须指定一名事故指挥（Incident Commander）。",
        "如果过去 2 小时内有生产发布，先按《部署规范 v3》第 6 节执行回滚，再排查原因。",
        "客户现场机器人出现安全风险时，先请现场操作员按下全车队急停按钮。",
        "事故结束后记录结束时间，并在 3 个工作日内提交复盘草稿。",
    ]
    zh_items = [doc.add_paragraph(step, style="List Number") for step in zh_steps]
    _restart_numbering(doc, zh_items)
    doc.add_heading("4.2 升级与联系方式", level=2)
    doc.add_paragraph(
        "SEV1 事故超过 2 小时未恢复，须升级至 CTO。涉及信息安全的事件（账号泄露、"
        "电脑丢失等）须在 24 小时内报告安全团队：security@northwind.example，"
        "或拨打 IT 服务台分机 8000。值班补贴为每周 300 元，详见《员工手册》。"
    )

    doc.save(path)
    normalize_ooxml(path)


# ---------------------------------------------------------------------------
# XLSX: projects and staff
# ---------------------------------------------------------------------------

STAFF = [
    # Name, Team, Role, Hire date, On probation (as of 2024-09-02)
    ("李娜", "Fleet", "Engineering Manager", dt.date(2019, 3, 4), False),
    ("王磊", "Cloud", "Senior Backend Engineer", dt.date(2020, 8, 17), False),
    ("陈静", "Perception", "Computer Vision Lead", dt.date(2018, 5, 21), False),
    ("赵敏", "Firmware", "Embedded Engineer", dt.date(2021, 11, 1), False),
    ("Emily Carter", "Product", "Product Manager", dt.date(2022, 2, 14), False),
    ("刘洋", "Hardware", "Battery Systems Engineer", dt.date(2023, 4, 10), False),
    ("孙浩", "Firmware", "Firmware Lead", dt.date(2017, 9, 4), False),
    ("Daniel Ng", "Cloud", "Site Reliability Engineer", dt.date(2023, 10, 9), False),
    ("吴婷", "People Operations", "HR Business Partner", dt.date(2016, 7, 1), False),
    ("周欣", "Product", "Associate Product Manager", dt.date(2024, 7, 15), True),
    ("郑凯", "Platform", "DevOps Engineer", dt.date(2024, 8, 5), True),
    ("Priya Raman", "Perception", "Machine Learning Engineer", dt.date(2024, 6, 17), True),
]

PROJECTS = [
    # Project, 项目名称, Owner, Status, Environment, Start date, Budget (CNY)
    ("Fleet Scheduler v2", "车队调度器 v2", "李娜", "In progress", "staging", dt.date(2024, 2, 5), 1200000),
    ("Telemetry Ingest", "遥测数据接入", "王磊", "Done", "prod", dt.date(2023, 9, 11), 850000),
    ("Warehouse Mapper", "仓库建图", "陈静", "In progress", "dev", dt.date(2024, 4, 15), 640000),
    ("Safety Stop Firmware", "安全急停固件", "赵敏", "Done", "prod", dt.date(2023, 6, 1), 420000),
    ("Web Console Redesign", "控制台改版", "Emily Carter", "In progress", "staging", dt.date(2024, 3, 18), 380000),
    ("Battery Health Monitor", "电池健康监测", "刘洋", "Planned", "dev", dt.date(2024, 10, 7), 300000),
    ("Dock Charging Protocol", "充电桩通信协议", "孙浩", "Done", "prod", dt.date(2023, 11, 20), 260000),
    ("Pick Path Optimizer", "拣货路径优化", "李娜", "In progress", "staging", dt.date(2024, 5, 6), 720000),
    ("Customer Portal", "客户门户", "Emily Carter", "Done", "prod", dt.date(2023, 3, 13), 510000),
    ("Edge Vision Model", "边缘视觉模型", "陈静", "In progress", "dev", dt.date(2024, 6, 3), 980000),
    ("Singapore Region Rollout", "新加坡区域上线", "Daniel Ng", "In progress", "prod", dt.date(2024, 7, 1), 1500000),
    ("Log Retention Cleanup", "日志保留治理", "王磊", "Done", "prod", dt.date(2024, 1, 8), 90000),
    ("Voice Command Pilot", "语音指令试点", "周欣", "Planned", "dev", dt.date(2024, 11, 4), 450000),
    ("Spare Parts Forecast", "备件需求预测", "刘洋", "Planned", "dev", dt.date(2025, 1, 6), 210000),
    ("OTA Update Service", "远程升级服务", "孙浩", "In progress", "staging", dt.date(2024, 4, 22), 670000),
]


def make_workbook(path: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font, PatternFill

    wb = Workbook()
    wb.properties.creator = AUTHOR
    wb.properties.lastModifiedBy = AUTHOR
    wb.properties.title = "Northwind Robotics projects and staff"
    wb.properties.created = FIXED
    wb.properties.modified = FIXED

    header_font = Font(bold=True)
    header_fill = PatternFill("solid", fgColor="DDEBF7")

    def fill(ws, header, rows, widths, formats):
        ws.append(list(header))
        for cell in ws[1]:
            cell.font = header_font
            cell.fill = header_fill
        for row in rows:
            ws.append(list(row))
        for col_idx, width in enumerate(widths, start=1):
            ws.column_dimensions[chr(64 + col_idx)].width = width
        for col_idx, fmt in formats.items():
            for r in range(2, ws.max_row + 1):
                ws.cell(row=r, column=col_idx).number_format = fmt
        ws.freeze_panes = "A2"
        ws.auto_filter.ref = ws.dimensions

    ws = wb.active
    ws.title = "Projects"
    fill(
        ws,
        ("Project", "项目名称", "Owner", "Status", "Environment", "Start date", "Budget"),
        PROJECTS,
        (26, 16, 14, 12, 13, 12, 12),
        {6: "yyyy-mm-dd", 7: "#,##0"},
    )

    ws2 = wb.create_sheet("Staff")
    fill(
        ws2,
        ("Name", "Team", "Role", "Hire date", "On probation"),
        STAFF,
        (14, 18, 28, 12, 13),
        {4: "yyyy-mm-dd"},
    )

    wb.save(path)
    normalize_ooxml(path)


# ---------------------------------------------------------------------------
# PDF: information security policy (3 pages)
# ---------------------------------------------------------------------------

PDF_PAGES = [
    # page 1
    [
        ("h1", "Information Security Policy"),
        ("meta", "Northwind Robotics - Policy SEC-001 - Version 2.1 - Effective 1 March 2024 - "
                 "Owner: Chief Information Security Officer"),
        ("h2", "1. Purpose and scope"),
        ("p", "This policy protects the information that Northwind Robotics and its customers "
              "trust us with: robot telemetry, warehouse maps, source code, and personal data of "
              "employees. It applies to all employees, contractors and interns, on every device "
              "that accesses company systems, whether in the office, at a customer site or at home."),
        ("h2", "2. Roles"),
        ("p", "The Chief Information Security Officer (CISO) owns this policy and reviews it "
              "once a year. The Security Team runs monitoring and incident response. Managers make "
              "sure their teams complete security training within the first week of employment "
              "and then every 12 months."),
        ("h2", "3. Data classification"),
        ("p", "All information is classified into one of four levels. The owner of a document "
              "sets its level; when unsure, treat information as Confidential."),
        ("li", "Public - approved for publication, e.g. marketing material and press releases."),
        ("li", "Internal - day-to-day company information such as this policy and the handbook."),
        ("li", "Confidential - source code, customer contracts, warehouse maps, robot telemetry."),
        ("li", "Restricted - security keys, production credentials and employee health or salary "
               "data. Restricted data is encrypted at rest and may be shared only with named people."),
        ("p", "Confidential and Restricted data must never be stored on personal devices or "
              "uploaded to public AI tools, file-sharing sites or personal cloud storage."),
    ],
    # page 2
    [
        ("h2", "4. Access control and passwords"),
        ("p", "Access is granted on the principle of least privilege and reviewed every quarter "
              "by the system owner. Accounts of people who leave are disabled on their last "
              "working day."),
        ("li", "Passwords must be at least 14 characters long and must not contain your name or "
               "the word Northwind."),
        ("li", "Password rotation: every password must be changed every 90 days. The last 5 "
               "passwords cannot be reused."),
        ("li", "After 5 failed sign-in attempts an account is locked for 15 minutes."),
        ("li", "Multi-factor authentication (MFA) is required for email, VPN, source code hosting, "
               "cloud consoles and the HR portal. Hardware security keys are required for "
               "production cluster access."),
        ("li", "Service accounts use secrets from the central vault; their credentials are "
               "rotated automatically every 30 days."),
        ("h2", "5. Device security"),
        ("li", "All company laptops must use full-disk encryption (BitLocker or FileVault). "
               "A laptop without encryption is blocked from the network."),
        ("li", "Screens lock automatically after 5 minutes of inactivity."),
        ("li", "Operating system and browser updates are installed within 14 days of release; "
               "critical security patches within 72 hours."),
        ("li", "Only software from the company software catalogue may be installed. Requests "
               "for other software go to the IT service desk."),
        ("li", "USB storage devices are disabled by default on machines with production access."),
    ],
    # page 3
    [
        ("h2", "6. Incident reporting"),
        ("p", "A security incident is any event that may harm the confidentiality, integrity or "
              "availability of company or customer information: a lost or stolen laptop or phone, "
              "a phishing email you clicked, a password shared by mistake, malware, or unusual "
              "activity on your account."),
        ("li", "Report every suspected security incident to the Security Team within 24 hours "
               "of discovery - earlier is always better."),
        ("li", "Channels: security@northwind.example, the IT service desk on extension 8000, "
               "or the #security-help chat channel."),
        ("li", "Do not try to investigate on your own, do not delete evidence, and do not "
               "contact the suspected attacker."),
        ("li", "Where personal data is involved, the Security Team informs the Data Protection "
               "Officer, who decides on notifications to authorities within 72 hours."),
        ("p", "Employees who report in good faith are never penalised, even when the incident "
              "was caused by their own mistake."),
        ("h2", "7. Exceptions and enforcement"),
        ("p", "Exceptions to this policy must be requested in writing from the CISO, are granted "
              "for at most 6 months, and are recorded in the exception register. Violations may "
              "lead to disciplinary action up to and including termination of employment."),
        ("h2", "8. Review"),
        ("p", "This policy is reviewed every 12 months, or earlier after a SEV1 security "
              "incident. Next scheduled review: March 2025."),
    ],
]


def make_pdf(path: Path) -> None:
    from fpdf import FPDF

    class PolicyPDF(FPDF):
        def header(self):
            self.set_font("Helvetica", "I", 8)
            self.set_text_color(110, 110, 110)
            self.cell(0, 6, "Northwind Robotics - Information Security Policy (SEC-001 v2.1) - Internal",
                      align="L")
            self.ln(10)
            self.set_text_color(0, 0, 0)

        def footer(self):
            self.set_y(-15)
            self.set_font("Helvetica", "I", 8)
            self.set_text_color(110, 110, 110)
            self.cell(0, 10, f"Page {self.page_no()} of {{nb}}", align="C")

    pdf = PolicyPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    pdf.set_margins(20, 15, 20)
    pdf.set_title("Information Security Policy")
    pdf.set_author("Northwind Robotics Security Team")
    pdf.set_subject("Information security rules for all Northwind Robotics staff")
    pdf.set_keywords("security, passwords, encryption, incident reporting")
    pdf.set_creator("KnowHub demo generator (assets/make_demo.py)")
    pdf.set_producer("fpdf2")
    pdf.set_creation_date(FIXED_UTC)
    pdf.alias_nb_pages()

    width = 170
    for blocks in PDF_PAGES:
        pdf.add_page()
        for kind, text in blocks:
            if kind == "h1":
                pdf.set_font("Helvetica", "B", 20)
                pdf.multi_cell(width, 10, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            elif kind == "meta":
                pdf.set_font("Helvetica", "", 9)
                pdf.multi_cell(width, 5, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(4)
            elif kind == "h2":
                pdf.ln(2)
                pdf.set_font("Helvetica", "B", 14)
                pdf.multi_cell(width, 8, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            elif kind == "p":
                pdf.set_font("Helvetica", "", 11)
                pdf.multi_cell(width, 6, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(2)
            elif kind == "li":
                pdf.set_font("Helvetica", "", 11)
                pdf.set_x(24)
                pdf.cell(5, 6, "-")
                pdf.multi_cell(width - 9, 6, text, new_x="LMARGIN", new_y="NEXT")
                pdf.ln(1)
            if pdf.get_y() > 275:
                raise RuntimeError(f"page {pdf.page_no()} overflows; shorten its text")

    pdf.output(str(path))


# ---------------------------------------------------------------------------

def main() -> None:
    targets = [
        (DEMO / "engineering" / "incident-runbook.docx", make_runbook),
        (DEMO / "data" / "projects.xlsx", make_workbook),
        (DEMO / "policies" / "security-policy.pdf", make_pdf),
    ]
    for path, build in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        build(path)
        size = path.stat().st_size
        if size >= 100 * 1024:
            raise RuntimeError(f"{path} is {size} bytes; keep generated files under 100 KB")
        print(f"wrote {path.relative_to(DEMO.parent.parent)} ({size} bytes)")


if __name__ == "__main__":
    main()
